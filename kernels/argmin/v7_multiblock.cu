// v7: v4 with several blocks per query, so a handful of queries still fills the GPU. The block count
// per query comes from the occupancy calculator (resident blocks per SM) × the SM count of the
// device, divided among the m queries; each block scans a strided share of the SoA references and
// leaves one (distance, index) candidate. The second-level reduction of a query's candidates runs on
// the CPU, as in the seed: the candidates are downloaded ("d2h") and reduced by a host loop
// ("host_reduce"). Measured on an H100 against a one-warp-per-query GPU kernel (the test-only t5), the
// host was faster on the small cases by one launch and equal on the large ones; the figures are in
// kernels/argmin/multiblock.cu. ctx.path records the blocks per query chosen.
#include <fmt/format.h>

#include "kernels/argmin/gpu_frame.hpp"
#include "kernels/argmin/multiblock.hpp"

namespace {

void v7_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  knn::gpu::MultiblockSearch search(gpu, p.m, p.n, p.dim, knn::gpu::BlockReduce::tree,
                                    knn::gpu::SecondLevel::host);
  search.enqueue(p.queries, p.references);
  search.finish_on_host(ctx.timing, out.indices, out.distances);
  ctx.path = fmt::format("{} blocks per query ({} resident blocks on the device)", search.blocks_per_query(),
                         search.resident_blocks());
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v7", "GPU several blocks per query (occupancy-sized grid), host second-level argmin",
                                   knn::Family::gpu, knn::GpuNeed::one, v7_query,
                                   [](const knn::Problem& p, const knn::Environment& env) {
                                     return knn::gpu::multiblock_device_bytes(p.m, p.n, p.dim,
                                                                              env.devices.front().sm_count);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
