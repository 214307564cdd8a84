#pragma once
// Host-side frame shared by the GPU argmin versions (v1–v9): the device scope, one stream, the phase
// timer, device allocations (their host time reported as phase "alloc"), uploads ("h2d"), the
// answers' download ("d2h"), and the version descriptor every argmin version fills the same way.
// Declare device buffers after the frame: they are then freed while its device is still current.
#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/cuda/runtime.hpp"
#include "core/registry.hpp"

namespace knn::gpu {

// The skip reasons every argmin version shares.
inline std::optional<std::string> argmin_supports(const Problem& p) {
  if (p.topk != 1) return std::string("topk > 1 not supported (argmin version)");
  if (p.m < 1 || p.n < 1 || p.dim < 1) return std::string("empty problem (m, n and k must be positive)");
  return std::nullopt;
}

using SupportsFn = std::function<std::optional<std::string>(const Problem&, const Environment&)>;
using DeviceBytesFn = std::function<std::size_t(const Problem&, const Environment&)>;

// The descriptor of an argmin version. `device_bytes` is what one call allocates on each GPU it uses
// (the harness skips the case when that exceeds the free memory); `supports` defaults to argmin_supports.
inline VersionDesc describe_argmin(std::string id, std::string title, Family family, GpuNeed gpus, QueryFn query,
                                   DeviceBytesFn device_bytes, SupportsFn supports = nullptr) {
  VersionDesc d;
  d.id = std::move(id);
  d.title = std::move(title);
  d.family = family;
  d.gpus = gpus;
  d.supports = supports ? std::move(supports)
                        : SupportsFn([](const Problem& p, const Environment&) { return argmin_supports(p); });
  d.device_bytes = std::move(device_bytes);
  d.make = query_only(query);
  return d;
}

// Bytes of `count` floats, and of the m per-query answers (index and distance).
inline std::size_t float_bytes(std::size_t count) { return count * sizeof(float); }
inline std::size_t answer_bytes(const Problem& p) { return std::size_t(p.m) * (sizeof(std::int32_t) + sizeof(float)); }

// Where m per-query answers sit in device memory: index (within the references searched) and
// squared distance.
struct AnswersView {
  const std::int32_t* indices;
  const float* distances;
};

// Per-query answers in their own device buffers.
struct DeviceAnswers {
  cuda::DeviceBuffer<std::int32_t> indices;
  cuda::DeviceBuffer<float> distances;
  operator AnswersView() const { return {indices.data(), distances.data()}; }
};

// Everything one host thread needs to drive one device.
class DeviceFrame {
 public:
  explicit DeviceFrame(int ordinal) : ordinal_(ordinal), scope_(ordinal), timer_(stream_.get()) {}
  DeviceFrame(const DeviceFrame&) = delete;
  DeviceFrame& operator=(const DeviceFrame&) = delete;

  int ordinal() const { return ordinal_; }
  cudaStream_t stream() const { return stream_.get(); }
  cuda::PhaseTimer& timer() { return timer_; }

  // cudaMalloc on this device; the host time it takes adds to phase "alloc".
  template <typename T>
  cuda::DeviceBuffer<T> alloc(std::size_t count) {
    return timed_alloc([&] { return cuda::DeviceBuffer<T>(count); });
  }
  DeviceAnswers alloc_answers(int m) { return {alloc<std::int32_t>(m), alloc<float>(m)}; }
  // Stream-ordered device memory for this frame's stream only: no host synchronisation at allocation
  // or free (cuda::StreamBuffer). Host time adds to phase "alloc". Declare it after the frame.
  template <typename T>
  cuda::StreamBuffer<T> alloc_on_stream(std::size_t count) {
    return timed_alloc([&] { return cuda::StreamBuffer<T>(count, stream()); });
  }
  // A pooled page-locked host block of `count` elements (cuda::PinnedStaging), for downloads; host
  // time adds to phase "alloc" (a cudaMallocHost the first time a block of that size is needed).
  template <typename T>
  cuda::PinnedStaging<T> staging(std::size_t count) {
    return timed_alloc([&] { return cuda::PinnedStaging<T>(count); });
  }

  // Enqueues work timed as one phase with the stream's events.
  template <typename Enqueue>
  void timed(const char* phase, Enqueue&& enqueue) {
    timer_.begin(phase);
    enqueue();
    timer_.end();
  }
  // As timed(), for kernel launches: checks the launch before closing the phase.
  template <typename Enqueue>
  void launch(const char* phase, Enqueue&& enqueue) {
    timer_.begin(phase);
    enqueue();
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) cuda::throw_cuda_error(err, (std::string("launch in phase ") + phase).c_str(), __FILE__, __LINE__);
    timer_.end();
  }

  // Enqueues a copy of `count` host elements to `device`, timed as "h2d".
  template <typename T>
  void copy_to_device(T* device, const T* host, std::size_t count) {
    timed("h2d", [&] {
      KNN_CUDA_TRY(cudaMemcpyAsync(device, host, count * sizeof(T), cudaMemcpyHostToDevice, stream()));
    });
  }
  // Allocates a device copy of `count` host elements and enqueues the copy.
  template <typename T>
  cuda::DeviceBuffer<T> upload(const T* host, std::size_t count) {
    auto buffer = alloc<T>(count);
    copy_to_device(buffer.data(), host, count);
    return buffer;
  }

  // Enqueues the copy of m answers to host memory, timed as "d2h".
  void download(AnswersView answers, std::int32_t* indices, float* distances, int m) {
    timed("d2h", [&] {
      KNN_CUDA_TRY(cudaMemcpyAsync(indices, answers.indices, std::size_t(m) * sizeof(std::int32_t),
                                   cudaMemcpyDeviceToHost, stream()));
      KNN_CUDA_TRY(cudaMemcpyAsync(distances, answers.distances, std::size_t(m) * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream()));
    });
  }

  // Waits for the stream, then hands the phases to `sink` (events, plus the host-timed "alloc").
  void synchronize_and_report(TimingSink& sink) {
    stream_.synchronize();
    timer_.report(sink);
    sink.add("alloc", alloc_ms_);
    alloc_ms_ = 0;
  }

 private:
  // Runs `make` and adds its host time to phase "alloc".
  template <typename Make>
  auto timed_alloc(Make&& make) {
    const auto start = std::chrono::steady_clock::now();
    auto made = make();
    alloc_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return made;
  }

  int ordinal_;
  cuda::DeviceScope scope_;
  cuda::Stream stream_;
  cuda::PhaseTimer timer_;
  double alloc_ms_ = 0;
};

// Queries and references copied to the device as given (row-major, array of structures).
struct DeviceProblem {
  cuda::DeviceBuffer<float> queries;
  cuda::DeviceBuffer<float> references;
};

// The frame of a single-GPU version: the first selected device (recorded in ctx.devices_used);
// finish() downloads the answers into `out` and reports the phases to the harness.
class SingleGpu : public DeviceFrame {
 public:
  explicit SingleGpu(RunContext& ctx) : DeviceFrame(first_ordinal(ctx)), ctx_(ctx) { ctx.devices_used = {ordinal()}; }

  const DeviceInfo& device() const { return ctx_.env.devices.front(); }

  DeviceProblem upload_problem(const Problem& p) {
    DeviceProblem d;
    d.queries = upload(p.queries, p.query_floats());
    d.references = upload(p.references, p.reference_floats());
    return d;
  }

  // Threads per block for a one-block-per-query kernel (v3–v6, argmin.cuh): `narrow` when m blocks of
  // that many threads fill every SM at the occupancy the calculator gives `narrow_kernel`, else
  // `wide`. Recorded in the result's path.
  template <typename Kernel>
  int query_block_threads(int m, Kernel* narrow_kernel, int narrow, int wide) {
    const int per_sm = cuda::resident_blocks_per_sm(ordinal(), reinterpret_cast<const void*>(narrow_kernel), narrow);
    const long long resident = static_cast<long long>(per_sm) * device().sm_count;
    const int threads = per_sm > 0 && m >= resident ? narrow : wide;
    ctx_.path = fmt::format("one block of {} threads per query ({} queries; {} blocks of {} fit at once)", threads, m,
                            resident, narrow);
    return threads;
  }
  // Records in the result's path that a one-block-per-query kernel takes `wide` threads per block
  // whatever m is, and why.
  void wide_query_blocks(int wide, const char* reason) {
    ctx_.path = fmt::format("one block of {} threads per query ({})", wide, reason);
  }

  // Appends a note to the result's path.
  void add_path(const std::string& note) { ctx_.path = ctx_.path.empty() ? note : ctx_.path + "; " + note; }

  void finish(AnswersView answers, Neighbors out, int m) {
    download(answers, out.indices, out.distances, m);
    synchronize_and_report(ctx_.timing);
  }

 private:
  static int first_ordinal(const RunContext& ctx) {
    if (ctx.env.devices.empty()) throw std::runtime_error("no CUDA device selected");
    return ctx.env.devices.front().ordinal;
  }
  RunContext& ctx_;
};

}  // namespace knn::gpu
