// Test-only version, linked into knnbench-testbin and never into knnbench: v7 with its second-level
// reduction on the host, as the seed did it. The search kernel, grid and phases are v7's; instead of
// the one-warp-per-query GPU kernel, the m × B per-block candidates are downloaded ("d2h") and each
// query's B candidates are reduced by a host loop (phase "host_reduce", host clock). Run it beside v7
// to measure where the second level belongs:
//   knnbench-testbin --version v7,t5 --json v7-second-level.json
#include <chrono>
#include <cstddef>
#include <vector>

#include "kernels/common/gpu_frame.hpp"
#include "kernels/common/multiblock.hpp"

namespace {

using knn::gpu::Candidate;

// v0's order: smaller distance first, then smaller index.
bool precedes(const Candidate& a, const Candidate& b) {
  return a.distance < b.distance || (a.distance == b.distance && a.index < b.index);
}

void t5_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  knn::gpu::MultiblockSearch search(gpu, p.m, p.n, p.dim, knn::gpu::BlockReduce::tree, knn::gpu::SecondLevel::host);
  search.enqueue(p.queries, p.references);
  std::vector<Candidate> partials(search.partial_count());
  gpu.timed("d2h", [&] {
    KNN_CUDA_TRY(cudaMemcpyAsync(partials.data(), search.partials(), partials.size() * sizeof(Candidate),
                                 cudaMemcpyDeviceToHost, gpu.stream()));
  });
  gpu.synchronize_and_report(ctx.timing);

  const auto start = std::chrono::steady_clock::now();
  const std::size_t per_query = std::size_t(search.blocks_per_query());
  for (int q = 0; q < p.m; ++q) {
    const Candidate* mine = partials.data() + std::size_t(q) * per_query;
    Candidate best = mine[0];
    for (std::size_t b = 1; b < per_query; ++b)
      if (precedes(mine[b], best)) best = mine[b];
    out.indices[q] = best.index == knn::gpu::kNoIndex ? 0 : best.index;
    out.distances[q] = best.distance;
  }
  ctx.timing.add("host_reduce",
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  ctx.path = "test only: v7 with a host second-level reduction, " + std::to_string(per_query) + " blocks per query";
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("t5", "test only: v7 with the second-level reduction on the host",
                                   knn::Family::gpu, knn::GpuNeed::one, t5_query,
                                   [](const knn::Problem& p, const knn::Environment& env) {
                                     return knn::gpu::multiblock_device_bytes(p.m, p.n, p.dim,
                                                                              env.devices.front().sm_count);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
