// v7: v4 with several blocks per query, so a handful of queries still fills the GPU. The block count
// per query comes from the occupancy calculator (resident blocks per SM) × the SM count of the
// device, divided among the m queries; each block scans a strided share of the SoA references and
// leaves one (distance, index) candidate. The second-level reduction of a query's candidates runs on
// the GPU (one warp per query, shuffles), not on the CPU as in the seed: it saves the candidates'
// trip over PCIe and a host loop for one small launch, and gives v8/v9 the same per-GPU answers.
// Which is faster is for the H100 to tell. Kernels and launcher: kernels/common/multiblock.cu.
// ctx.path records the blocks per query chosen.
#include <fmt/format.h>

#include "kernels/common/gpu_frame.hpp"
#include "kernels/common/multiblock.hpp"

namespace {

void v7_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  knn::gpu::MultiblockSearch search(gpu, p.m, p.n, p.dim, knn::gpu::BlockReduce::tree);
  search.enqueue(p.queries, p.references);
  gpu.finish(search.answers(), out, p.m);
  ctx.path = fmt::format("{} blocks per query ({} resident blocks on the device)", search.blocks_per_query(),
                         search.resident_blocks());
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v7", "GPU several blocks per query (occupancy-sized grid), GPU second-level argmin",
                                   knn::Family::gpu, knn::GpuNeed::one, v7_query,
                                   [](const knn::Problem& p, const knn::Environment& env) {
                                     return knn::gpu::multiblock_device_bytes(p.m, p.n, p.dim,
                                                                              env.devices.front().sm_count);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
