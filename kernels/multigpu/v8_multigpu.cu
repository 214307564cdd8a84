// v8: v7 on every selected GPU. The references are split evenly across the GPUs; one OpenMP thread
// per GPU copies the queries and its slice (own stream, own cudaMemcpyAsync from the harness's host
// buffers, pinned or not), runs v7's transpose and multi-block search, downloads the per-block
// candidates and reduces them on the host as v7 does, giving its best (distance, slice index) per
// query. Once every GPU is done, the threads merge disjoint ranges of queries over the GPUs in the
// (distance, index) order, turning slice indices into global ones; no lock. With one GPU it is v7
// plus the merge, and ctx.path says so. Driver: kernels/multigpu/multigpu.cu.
#include "kernels/argmin/gpu_frame.hpp"
#include "kernels/multigpu/multigpu.hpp"

namespace {

void v8_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::run_multigpu_argmin(p, out, ctx, knn::gpu::BlockReduce::tree);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v8", "multi-GPU: references split across GPUs, v7 per GPU, host merge",
                                   knn::Family::multi_gpu, knn::GpuNeed::all_selected, v8_query,
                                   knn::gpu::multigpu_device_bytes);
}

}  // namespace

KNN_REGISTER_VERSION(describe());
