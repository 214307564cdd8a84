#pragma once
// Host-side CUDA runtime helpers shared by the harness and the GPU versions:
// the error macro, RAII owners (device buffers, pinned buffers, streams, events, device scope)
// and the event-based phase timer. Runtime API only, so plain C++ files may include it.
#if !KNN_HAVE_CUDA
#error "cuda_rt.hpp needs a CUDA build (KNN_HAVE_CUDA=1)"
#endif

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "timing.hpp"

namespace knn::cuda {

// Thrown by KNN_CUDA_TRY; carries the CUDA error code so callers can tell out-of-memory apart.
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// Out of device memory: the harness records a skip with the message and carries on.
class CudaOutOfMemory : public OutOfMemoryError {
 public:
  using OutOfMemoryError::OutOfMemoryError;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so later calls are not poisoned by it
  if (err == cudaErrorMemoryAllocation) {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
    throw CudaOutOfMemory(std::string("out of device memory at ") + file + ":" + std::to_string(line) + " (" + call +
                          "); device has " + std::to_string(free_b >> 20) + " MiB free of " + std::to_string(total_b >> 20) + " MiB");
  }
  throw CudaError(err, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                           cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace knn::cuda

// Checks a runtime call; throws knn::cuda::CudaError with file:line, the call and the error name.
#define KNN_CUDA_TRY(call)                                                             \
  do {                                                                                 \
    const cudaError_t knn_err_ = (call);                                               \
    if (knn_err_ != cudaSuccess) ::knn::cuda::throw_cuda_error(knn_err_, #call, __FILE__, __LINE__); \
  } while (0)

// Checks the last kernel launch (configuration errors) without synchronising.
#define KNN_CUDA_CHECK_LAUNCH() KNN_CUDA_TRY(cudaGetLastError())

// For destructors: report, never throw.
#define KNN_CUDA_TRY_NO_THROW(call)                                                              \
  do {                                                                                           \
    const cudaError_t knn_err_ = (call);                                                         \
    if (knn_err_ != cudaSuccess)                                                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(knn_err_)); \
  } while (0)

namespace knn::cuda {

inline int divup(long long a, long long b) { return int((a + b - 1) / b); }

// Sets the current device for a scope and restores the previous one (faiss DeviceScope).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    KNN_CUDA_TRY(cudaGetDevice(&previous_));
    if (device != previous_) KNN_CUDA_TRY(cudaSetDevice(device));
  }
  ~DeviceScope() { KNN_CUDA_TRY_NO_THROW(cudaSetDevice(previous_)); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

// Owns `count` elements of device memory on the current device, taken from the device's
// stream-ordered memory pool. The harness keeps freed pool memory for reuse while a (case,
// version) is measured (see warmup.cu), so a call's allocations cost microseconds after the
// first call instead of a cudaMalloc each; it trims the pools between versions.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ == 0) return;
    KNN_CUDA_TRY(cudaGetDevice(&device_));
    KNN_CUDA_TRY(cudaMallocAsync(reinterpret_cast<void**>(&ptr_), count_ * sizeof(T), cudaStreamLegacy));
    // Stream-ordered: make the allocation usable from every stream before handing it out.
    KNN_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
  }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)), device_(o.device_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
      device_ = o.device_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  void reset() {
    if (ptr_) {
      int current = 0;
      KNN_CUDA_TRY_NO_THROW(cudaGetDevice(&current));
      if (current != device_) KNN_CUDA_TRY_NO_THROW(cudaSetDevice(device_));
      // Like cudaFree, wait for the device first: no kernel of any stream may still use the memory.
      KNN_CUDA_TRY_NO_THROW(cudaDeviceSynchronize());
      KNN_CUDA_TRY_NO_THROW(cudaFreeAsync(ptr_, cudaStreamLegacy));
      if (current != device_) KNN_CUDA_TRY_NO_THROW(cudaSetDevice(current));
    }
    ptr_ = nullptr;
    count_ = 0;
  }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
  int device_ = 0;
};

// Owns `count` elements of device memory allocated and freed in the order of one stream
// (cudaMallocAsync / cudaFreeAsync on it): neither needs the host to wait for the device, unlike
// DeviceBuffer, which synchronises so any stream may use it. Use it from that stream only (or after
// synchronising it), and free it before the stream goes back to its pool.
template <typename T>
class StreamBuffer {
 public:
  StreamBuffer() = default;
  StreamBuffer(std::size_t count, cudaStream_t stream) : count_(count), stream_(stream) {
    if (count_ > 0) KNN_CUDA_TRY(cudaMallocAsync(reinterpret_cast<void**>(&ptr_), count_ * sizeof(T), stream_));
  }
  ~StreamBuffer() {
    if (ptr_) KNN_CUDA_TRY_NO_THROW(cudaFreeAsync(ptr_, stream_));
  }
  StreamBuffer(StreamBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)), stream_(o.stream_) {}
  StreamBuffer& operator=(StreamBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) KNN_CUDA_TRY_NO_THROW(cudaFreeAsync(ptr_, stream_));
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
      stream_ = o.stream_;
    }
    return *this;
  }
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  T* data() const { return ptr_; }
  std::size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
  cudaStream_t stream_ = nullptr;
};

// Page-locked host memory (cudaMallocHost).
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) KNN_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&ptr_), count_ * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (ptr_) KNN_CUDA_TRY_NO_THROW(cudaFreeHost(ptr_));
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&&) = delete;
  PinnedBuffer(const PinnedBuffer&) = delete;
  T* data() const { return ptr_; }
  std::size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// Streams and events are taken from per-device free lists and given back, instead of being created
// and destroyed in every timed call: the create/destroy pairs are driver calls, and in a multi-GPU
// call the GPUs' threads queue for the driver on them. Handles are kept for the process's life (the
// pool is leaked on purpose, so nothing is destroyed after the driver has shut down). Small pinned
// host blocks for downloads are pooled the same way. The mutex is held for a vector push or pop only.
class HandlePool {
 public:
  static HandlePool& instance() {
    static HandlePool* pool = new HandlePool;
    return *pool;
  }
  cudaStream_t take_stream() {
    const int device = current_device();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& free = streams_[device];
      if (!free.empty()) {
        const cudaStream_t s = free.back();
        free.pop_back();
        return s;
      }
    }
    cudaStream_t s = nullptr;
    KNN_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }
  cudaEvent_t take_event() {
    const int device = current_device();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& free = events_[device];
      if (!free.empty()) {
        const cudaEvent_t e = free.back();
        free.pop_back();
        return e;
      }
    }
    cudaEvent_t e = nullptr;
    KNN_CUDA_TRY(cudaEventCreate(&e));
    return e;
  }
  void give(int device, cudaStream_t s) {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_[device].push_back(s);
  }
  void give(int device, cudaEvent_t e) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_[device].push_back(e);
  }
  // Page-locked host memory of at least `bytes` (cudaMallocHost is milliseconds; a pooled block is
  // a vector pop). Returns the block and its size; give it back with give_pinned().
  std::pair<void*, std::size_t> take_pinned(std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto it = pinned_.begin(); it != pinned_.end(); ++it)
        if (it->second >= bytes) {
          const auto block = *it;
          pinned_.erase(it);
          return block;
        }
    }
    constexpr std::size_t kSmallest = std::size_t(64) << 10;
    const std::size_t size = bytes < kSmallest ? kSmallest : bytes;
    void* p = nullptr;
    KNN_CUDA_TRY(cudaMallocHost(&p, size));
    return {p, size};
  }
  void give_pinned(std::pair<void*, std::size_t> block) {
    std::lock_guard<std::mutex> lock(mutex_);
    pinned_.push_back(block);
  }
  static int current_device() {
    int device = 0;
    KNN_CUDA_TRY(cudaGetDevice(&device));
    return device;
  }

 private:
  std::mutex mutex_;
  std::map<int, std::vector<cudaStream_t>> streams_;
  std::map<int, std::vector<cudaEvent_t>> events_;
  std::vector<std::pair<void*, std::size_t>> pinned_;
};

// Resident blocks per SM of `kernel` launched with `threads` threads and no dynamic shared memory
// on device `ordinal` (which must be current), from the occupancy calculator. The answer depends on
// the device, the kernel and the block size only, so it is asked once per process and cached: the
// versions that size their launches with it (v3–v9) would otherwise spend a driver query in every
// timed call.
inline int resident_blocks_per_sm(int ordinal, const void* kernel, int threads) {
  static std::mutex mutex;
  static std::map<std::tuple<int, const void*, int>, int> known;
  const auto key = std::make_tuple(ordinal, kernel, threads);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(key); it != known.end()) return it->second;
  }
  int per_sm = 0;
  KNN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, per_sm);
  return per_sm;
}

// `count` elements of page-locked host memory from the pool: a download target that needs no
// staging copy by the driver and no cudaMallocHost in a timed call.
template <typename T>
class PinnedStaging {
 public:
  PinnedStaging() = default;
  explicit PinnedStaging(std::size_t count) : count_(count) {
    if (count_ > 0) block_ = HandlePool::instance().take_pinned(count_ * sizeof(T));
  }
  ~PinnedStaging() {
    if (block_.first) HandlePool::instance().give_pinned(block_);
  }
  PinnedStaging(PinnedStaging&& o) noexcept
      : block_(std::exchange(o.block_, {nullptr, 0})), count_(std::exchange(o.count_, 0)) {}
  PinnedStaging& operator=(PinnedStaging&& o) noexcept {
    if (this != &o) {
      if (block_.first) HandlePool::instance().give_pinned(block_);
      block_ = std::exchange(o.block_, {nullptr, 0});
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  T* data() const { return static_cast<T*>(block_.first); }
  std::size_t size() const { return count_; }

 private:
  std::pair<void*, std::size_t> block_{nullptr, 0};
  std::size_t count_ = 0;
};

// A non-blocking stream of the current device, from the pool.
class Stream {
 public:
  Stream() : device_(HandlePool::current_device()), s_(HandlePool::instance().take_stream()) {}
  ~Stream() {
    if (s_) HandlePool::instance().give(device_, s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }
  void synchronize() const { KNN_CUDA_TRY(cudaStreamSynchronize(s_)); }

 private:
  int device_;
  cudaStream_t s_ = nullptr;
};

// A timing event of the current device, from the pool.
class Event {
 public:
  Event() : device_(HandlePool::current_device()), e_(HandlePool::instance().take_event()) {}
  ~Event() {
    if (e_) HandlePool::instance().give(device_, e_);
  }
  Event(Event&& o) noexcept : device_(o.device_), e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { KNN_CUDA_TRY(cudaEventRecord(e_, s)); }

 private:
  int device_;
  cudaEvent_t e_ = nullptr;
};

// Owns a texture object (v5).
class TextureObject {
 public:
  TextureObject() = default;
  TextureObject(const cudaResourceDesc& res, const cudaTextureDesc& tex) {
    KNN_CUDA_TRY(cudaCreateTextureObject(&t_, &res, &tex, nullptr));
  }
  ~TextureObject() {
    if (t_) KNN_CUDA_TRY_NO_THROW(cudaDestroyTextureObject(t_));
  }
  TextureObject(const TextureObject&) = delete;
  TextureObject& operator=(const TextureObject&) = delete;
  cudaTextureObject_t get() const { return t_; }

 private:
  cudaTextureObject_t t_ = 0;
};

// Times phases of GPU work with events on one stream, and hands the elapsed times to the
// harness's sink once the stream is synchronised:
//   PhaseTimer t(stream);
//   t.begin("h2d"); copies...; t.end();
//   t.begin("kernel"); launches...; t.end();
//   stream.synchronize(); t.report(ctx.timing);            // or report_device(ctx.timing, dev)
class PhaseTimer {
 public:
  explicit PhaseTimer(cudaStream_t stream) : stream_(stream) {}
  void begin(std::string phase) {
    marks_.push_back({std::move(phase), Event{}, Event{}});
    marks_.back().start.record(stream_);
  }
  void end() { marks_.back().stop.record(stream_); }
  // Call after the stream has been synchronised.
  void report(TimingSink& sink, int device = -1) {
    for (auto& m : marks_) {
      float ms = 0.f;
      KNN_CUDA_TRY(cudaEventElapsedTime(&ms, m.start.get(), m.stop.get()));
      if (device < 0)
        sink.add(m.phase, ms);
      else
        sink.add_device(device, m.phase, ms);
    }
    marks_.clear();
  }

 private:
  struct Mark {
    std::string phase;
    Event start, stop;
  };
  cudaStream_t stream_;
  std::vector<Mark> marks_;
};

}  // namespace knn::cuda
