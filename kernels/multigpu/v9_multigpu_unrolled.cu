// v9: v8 with each search block's reduction unrolled at compile time. The block size (1024) is a
// template constant, so the shared-memory steps from 512 down to 32 are unrolled with no loop
// bookkeeping, and the last warp finishes with shuffles instead of five more barriers
// (block_argmin_unrolled in kernels/argmin/argmin.cuh). Everything else is v8's driver.
#include "kernels/argmin/gpu_frame.hpp"
#include "kernels/multigpu/multigpu.hpp"

namespace {

void v9_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::run_multigpu_argmin(p, out, ctx, knn::gpu::BlockReduce::unrolled);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v9", "multi-GPU v8 with a compile-time unrolled block reduction",
                                   knn::Family::multi_gpu, knn::GpuNeed::all_selected, v9_query,
                                   knn::gpu::multigpu_device_bytes);
}

}  // namespace

KNN_REGISTER_VERSION(describe());
