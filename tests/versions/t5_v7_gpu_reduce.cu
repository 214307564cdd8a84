// Test-only version, linked into knnbench-testbin and never into knnbench: v7 with its second-level
// reduction on the GPU, in a second kernel with one warp per query, instead of v7's host loop. The
// search kernel, grid and other phases are v7's. Run it beside v7 to repeat the measurement that put
// v7's second level on the host:
//   knnbench-testbin --version v7,t5 --json v7-second-level.json
#include "kernels/common/gpu_frame.hpp"
#include "kernels/common/multiblock.hpp"

namespace {

void t5_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  knn::gpu::MultiblockSearch search(gpu, p.m, p.n, p.dim, knn::gpu::BlockReduce::tree, knn::gpu::SecondLevel::device);
  search.enqueue(p.queries, p.references);
  gpu.finish(search.answers(), out, p.m);
  ctx.path = "test only: v7 with a GPU second-level reduction, " + std::to_string(search.blocks_per_query()) +
             " blocks per query";
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("t5", "test only: v7 with the second-level reduction in a GPU kernel",
                                   knn::Family::gpu, knn::GpuNeed::one, t5_query,
                                   [](const knn::Problem& p, const knn::Environment& env) {
                                     return knn::gpu::multiblock_device_bytes(p.m, p.n, p.dim,
                                                                              env.devices.front().sm_count);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
