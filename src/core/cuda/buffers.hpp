#pragma once
// RAII owners of memory: DeviceBuffer (pooled, any stream), StreamBuffer (one stream),
// PinnedBuffer (cudaMallocHost) and PinnedStaging (a pooled pinned block).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <initializer_list>
#include <utility>

#include "core/cuda/error.hpp"
#include "core/cuda/pool.hpp"

namespace knn::cuda {

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

// Several device buffers of one call as pieces of one stream-ordered allocation: one cudaMallocAsync
// and one cudaFreeAsync on `stream` for all of them (each a few tenths of a microsecond of host time,
// which calls of some 50 µs feel). Each piece starts on a 256-byte boundary; an empty one is nullptr.
// The same rules as StreamBuffer: use the pieces from that stream only.
struct SlabPart {
  std::size_t bytes;
  void (*set)(void* target, std::byte* at);
  void* target;
};
template <typename T>
SlabPart slab_part(T*& pointer, std::size_t count) {
  return {count * sizeof(T), [](void* target, std::byte* at) { *static_cast<T**>(target) = reinterpret_cast<T*>(at); }, &pointer};
}
class StreamSlab {
 public:
  static constexpr std::size_t kAlign = 256;
  StreamSlab(cudaStream_t stream, std::initializer_list<SlabPart> parts) {
    std::size_t total = 0;
    for (const SlabPart& part : parts) total += (part.bytes + kAlign - 1) / kAlign * kAlign;
    buffer_ = StreamBuffer<std::byte>(total, stream);
    std::size_t at = 0;
    for (const SlabPart& part : parts) {
      part.set(part.target, part.bytes > 0 ? buffer_.data() + at : nullptr);
      at += (part.bytes + kAlign - 1) / kAlign * kAlign;
    }
  }
  std::size_t bytes() const { return buffer_.size(); }

 private:
  StreamBuffer<std::byte> buffer_;
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

}  // namespace knn::cuda
