#pragma once
// The host side the GPU tree versions (v11, v13) share: the instance that keeps a version's tree
// on its device between build() and query() (upload timed as "h2d", release on that device), the
// query pass (upload the queries, search, download the m × topk answers, each step timed with the
// stream's events), the choice between a thread and a warp per query, and the launch of a search
// kernel for the register-list capacity that fits topk. Each version keeps its tree layout, its
// kernel and its descriptor. Included by CUDA sources only.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cuda/runtime.hpp"
#include "core/registry.hpp"
#include "core/topk.hpp"

namespace knn::tree::gpu {

inline constexpr int kMaxTopk = 32;       // the largest register list
inline constexpr int kSearchBlock = 64;   // threads per block of a search kernel
inline constexpr int kMaxGrid = 1 << 20;  // keeps thread ids well inside int

// The register list's compile-time capacity for topk: 1, 8 or 32 (one kernel instance each).
inline int list_capacity(int topk) { return topk <= 1 ? 1 : (topk <= 8 ? 8 : 32); }

// Calls f(std::integral_constant<int, list_capacity(topk)>{}).
template <class F>
void with_list_capacity(int topk, F&& f) {
  if (topk <= 1)
    f(std::integral_constant<int, 1>{});
  else if (topk <= 8)
    f(std::integral_constant<int, 8>{});
  else
    f(std::integral_constant<int, 32>{});
}

// Whether one thread per query would leave most of `device` idle: m at most 4 per resident warp.
// Then a warp per query (its lanes share each leaf scan) is faster.
inline bool few_queries(int m, int device) {
  int sms = 0, threads_per_sm = 0;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  return std::int64_t(m) <= 4 * (std::int64_t(sms) * threads_per_sm / 32);
}

// Enqueues a search kernel(view, queries, m, topk, indices, distances) with kSearchBlock threads per
// block and one worker (a thread, or a warp when `warp`) per query, up to kMaxGrid blocks; beyond
// that the kernel's grid-stride loop takes over. Checks the launch.
template <class View>
void launch_search(void (*kernel)(View, const float*, int, int, std::int32_t*, float*), bool warp, const View& view,
                   const float* queries, int m, int topk, std::int32_t* indices, float* distances,
                   cudaStream_t stream) {
  const int grid = std::min(cuda::divup(std::int64_t(m) * (warp ? 32 : 1), kSearchBlock), kMaxGrid);
  kernel<<<grid, kSearchBlock, 0, stream>>>(view, queries, m, topk, indices, distances);
  KNN_CUDA_CHECK_LAUNCH();
}

// Allocates `dst` for src (at least one element, so an empty array still has a valid pointer) and
// enqueues the copy.
template <typename T>
void upload(cuda::DeviceBuffer<T>& dst, const std::vector<T>& src, cudaStream_t stream) {
  dst = cuda::DeviceBuffer<T>(std::max<std::size_t>(src.size(), 1));
  if (!src.empty())
    KNN_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data(), src.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
}

// On the current device and `stream`: uploads p's m queries ("h2d"), calls
// search(queries, indices, distances) to enqueue the search ("kernel"; not called when m = 0),
// downloads the answers into `out` ("d2h"), waits for the stream and reports the phases to
// ctx.timing. Every device buffer holds at least one element, so m = 0 still passes valid pointers.
template <class Search>
void run_queries(const Problem& p, Neighbors out, RunContext& ctx, cudaStream_t stream, Search&& search) {
  cuda::DeviceBuffer<float> queries(std::max<std::size_t>(p.query_floats(), 1));
  cuda::DeviceBuffer<std::int32_t> indices(std::max<std::size_t>(p.result_slots(), 1));
  cuda::DeviceBuffer<float> distances(std::max<std::size_t>(p.result_slots(), 1));
  cuda::PhaseTimer timer(stream);
  timer.begin("h2d");
  KNN_CUDA_TRY(cudaMemcpyAsync(queries.data(), p.queries, p.query_floats() * sizeof(float), cudaMemcpyHostToDevice,
                               stream));
  timer.end();
  timer.begin("kernel");
  if (p.m > 0) search(static_cast<const float*>(queries.data()), indices.data(), distances.data());
  timer.end();
  cuda::finish_with_answers(timer, p, indices.data(), distances.data(), out, stream, ctx.timing);
}

// A GPU tree version's instance: the first selected device and the version's DeviceTree on it (its
// device buffers, its search view and a cuda::Stream member `stream`), released on that device.
template <class DeviceTree>
class GpuTreeInstance : public VersionInstance {
 public:
  // `id` and `tree` ("kd-tree", "octree") name the version in errors.
  GpuTreeInstance(const char* id, const char* tree) : id_(id), tree_name_(tree) {}

  // A self-join searches topk + 1 neighbours among all points into pooled pinned rows, then drops
  // each point from its own row (core/topk.hpp); everything else is the version's search().
  void query(const Problem& p, Neighbors out, RunContext& ctx) final {
    if (!p.self_join) return search(p, out, ctx);
    const Problem wide = widened_for_self_join(p);
    cuda::PinnedStaging<std::int32_t> indices(wide.result_slots());
    cuda::PinnedStaging<float> distances(wide.result_slots());
    search(wide, Neighbors{indices.data(), distances.data()}, ctx);
    drop_self(p, indices.data(), distances.data(), out);
    ctx.path += ", self-join: topk + 1 searched, the point itself dropped";
  }
  ~GpuTreeInstance() override {
    if (!tree_) return;
    try {
      cuda::DeviceScope scope(device_);
      tree_.reset();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: releasing device memory failed: %s\n", id_, e.what());
    }
  }

 protected:
  // The version's query pass on a problem that is not a self-join.
  virtual void search(const Problem& p, Neighbors out, RunContext& ctx) = 0;

  // build(), first: takes the first selected device and records it as used.
  void select_device(RunContext& ctx) {
    if (ctx.env.devices.empty()) throw std::runtime_error(std::string(id_) + ": no CUDA device selected");
    device_ = ctx.env.devices[0].ordinal;
    ctx.devices_used = {device_};
  }

  // build(), once the host tree is ready: replaces the device tree by a fresh one whose buffers
  // upload(d) fills on d.stream, timed as "h2d" and waited for. Returns it, for its view.
  template <class Upload>
  DeviceTree& upload_tree(RunContext& ctx, Upload&& upload) {
    cuda::DeviceScope scope(device_);
    tree_.reset();
    tree_ = std::make_unique<DeviceTree>();
    DeviceTree& d = *tree_;
    cuda::PhaseTimer timer(d.stream);
    timer.begin("h2d");
    upload(d);
    timer.end();
    d.stream.synchronize();
    timer.report(ctx.timing);
    return d;
  }

  // query(): checks that build() ran on this problem (`same_problem`) and that topk fits a list;
  // then, on the device, plan(d) returns the function that enqueues the version's search on
  // d.stream, enqueue(queries, indices, distances), and run_queries runs it.
  template <class Plan>
  void query_on_device(const Problem& p, Neighbors out, RunContext& ctx, bool same_problem, Plan&& plan) {
    if (!tree_) throw std::logic_error(std::string(id_) + ": query() before build()");
    if (!same_problem) throw std::logic_error(std::string(id_) + ": query() on a different problem than build()");
    if (p.topk > kMaxTopk)
      throw std::invalid_argument(std::string(id_) + ": GPU " + tree_name_ + " supports topk ≤ 32");
    ctx.devices_used = {device_};
    cuda::DeviceScope scope(device_);
    DeviceTree& d = *tree_;
    run_queries(p, out, ctx, d.stream, plan(d));
  }

  int device() const { return device_; }

 private:
  const char* id_;
  const char* tree_name_;
  int device_ = -1;
  std::unique_ptr<DeviceTree> tree_;
};

}  // namespace knn::tree::gpu
