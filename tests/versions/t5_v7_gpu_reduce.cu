// Test-only version, linked into knnbench-testbin and never into knnbench: v7 with its second-level
// reduction on the GPU, in a second kernel with one warp per query, instead of v7's host loop. The
// search kernel, grid and other phases are v7's. Run it beside v7 to repeat the measurement that put
// v7's second level on the host:
//   knnbench-testbin --version v7,t5 --json v7-second-level.json
#include <string>

#include "kernels/argmin/argmin.cuh"
#include "kernels/argmin/gpu_frame.hpp"
#include "kernels/argmin/multiblock.hpp"

namespace {

using knn::gpu::Candidate;

constexpr int kWarp = 32;
constexpr int kReduceThreads = 256;  // 8 queries per block

// One warp answers one query: lane l reads the query's candidates l, l + 32, ... of its B, the warp
// shuffles to the first (distance, index), and lane 0 stores the answer.
__global__ void reduce_partials_kernel(int m, int blocks_per_query, const Candidate* __restrict__ partials,
                                       std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  const long long q = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  if (q >= m) return;  // whole warps leave together: q is the same on all 32 lanes
  const int lane = threadIdx.x % kWarp;
  const Candidate* mine = partials + q * blocks_per_query;
  Candidate c = knn::gpu::merge_candidates(knn::gpu::no_candidate(), lane, blocks_per_query, kWarp,
                                           [mine](int i) { return mine[i]; });
  c = knn::gpu::warp_argmin(c);
  if (lane == 0) knn::gpu::store_answer(c, q, indices, distances);
}

void t5_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  knn::gpu::MultiblockSearch search(gpu, p.m, p.n, p.dim, knn::gpu::BlockReduce::tree, knn::gpu::SecondLevel::caller);
  auto indices = gpu.alloc_on_stream<std::int32_t>(std::size_t(p.m));
  auto distances = gpu.alloc_on_stream<float>(std::size_t(p.m));
  search.enqueue(p.queries, p.references, [&] {
    const int blocks = knn::cuda::divup(static_cast<long long>(p.m) * kWarp, kReduceThreads);
    reduce_partials_kernel<<<blocks, kReduceThreads, 0, gpu.stream()>>>(p.m, search.blocks_per_query(),
                                                                        search.partials(), indices.data(),
                                                                        distances.data());
  });
  gpu.finish({indices.data(), distances.data()}, out, p.m);
  ctx.path = "test only: v7 with a GPU second-level reduction, " + std::to_string(search.blocks_per_query()) +
             " blocks per query";
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("t5", "test only: v7 with the second-level reduction in a GPU kernel",
                                   knn::Family::gpu, knn::GpuNeed::one, t5_query,
                                   [](const knn::Problem& p, const knn::Environment& env) {
                                     return knn::gpu::multiblock_device_bytes(p.m, p.n, p.dim,
                                                                              env.devices.front().sm_count) +
                                            knn::gpu::answer_bytes(p);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
