// v6: v4 (SoA references, read as float4 quads; same block sizes) with the queries in __constant__
// memory. All threads of a block read the same query float at the same time, which the constant
// cache serves as one broadcast.
//
// Constant memory holds 64 KiB, so at most 16384 / dim queries at a time: the queries go in batches
// of that many, each copied with cudaMemcpyToSymbolAsync and answered by one launch on the same
// stream (so a batch's copy waits for the previous batch's kernel). More than one batch is recorded
// in ctx.path. A single query larger than 64 KiB (dim > 16384) is a skip with the reason.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "kernels/argmin/argmin.cuh"
#include "kernels/argmin/gpu_frame.hpp"
#include "kernels/argmin/transpose.hpp"

namespace {

using knn::gpu::kQueryBlockThreadsNarrow;
using knn::gpu::kQueryBlockThreadsWide;

constexpr int kConstantQueryFloats = 16384;  // 64 KiB of float
__constant__ float c_queries[kConstantQueryFloats];

// Query q of the current batch: its dim floats at c_queries[q·dim ...].
struct ConstantQuery {
  int offset;
  __device__ __forceinline__ float operator()(int t) const { return c_queries[offset + t]; }
};

// One block answers query blockIdx.x of the batch (query first_query + blockIdx.x overall); one
// thread scans quads threadIdx.x, +kThreads, ... of the SoA array (as v4), then joins the block tree.
template <int kThreads>
__global__ void __launch_bounds__(kThreads, knn::gpu::query_block_min_blocks(kThreads))
    constant_query_kernel(int dim, int n, long long ld, int first_query, const float* __restrict__ soa,
                          std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  const ConstantQuery query{static_cast<int>(blockIdx.x) * dim};
  const knn::gpu::Candidate c = knn::gpu::scan_soa_quads<kThreads>(dim, query, knn::gpu::SoaQuadReferences{soa, ld}, n);
  knn::gpu::block_store_answer<kThreads>(c, static_cast<long long>(first_query) + blockIdx.x, indices, distances);
}

template <int kThreads>
void launch(knn::gpu::SingleGpu& gpu, const knn::Problem& p, int first, int count, const float* soa, long long ld,
            const knn::gpu::DeviceAnswers& answers) {
  constant_query_kernel<kThreads><<<count, kThreads, 0, gpu.stream()>>>(p.dim, p.n, ld, first, soa,
                                                                        answers.indices.data(),
                                                                        answers.distances.data());
}

std::optional<std::string> v6_supports(const knn::Problem& p, const knn::Environment& env) {
  if (auto reason = knn::gpu::argmin_supports(p)) return reason;
  if (p.dim > kConstantQueryFloats)
    return fmt::format("k={} exceeds {} floats: one query does not fit in 64 KiB of constant memory", p.dim,
                       kConstantQueryFloats);
  if (!env.devices.empty() && env.devices.front().total_constant_memory < sizeof(c_queries))
    return fmt::format("device has {} B of constant memory, v6 needs {} B", env.devices.front().total_constant_memory,
                       sizeof(c_queries));
  return std::nullopt;
}

void v6_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  const auto references = gpu.upload(p.references, p.reference_floats());
  const long long ld = knn::gpu::quad_leading_dimension(p.n);
  auto soa = gpu.alloc<float>(std::size_t(p.dim) * std::size_t(ld));
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  knn::gpu::transpose_references(gpu, references.data(), p.n, p.dim, soa.data(), ld);

  const int batch_queries = kConstantQueryFloats / p.dim;
  const int threads = gpu.query_block_threads(std::min(p.m, batch_queries), constant_query_kernel<kQueryBlockThreadsNarrow>,
                                              kQueryBlockThreadsNarrow, kQueryBlockThreadsWide);
  for (int first = 0; first < p.m; first += batch_queries) {
    const int count = std::min(batch_queries, p.m - first);
    gpu.timed("h2d", [&] {
      KNN_CUDA_TRY(cudaMemcpyToSymbolAsync(c_queries, p.queries + std::size_t(first) * std::size_t(p.dim),
                                           std::size_t(count) * std::size_t(p.dim) * sizeof(float), 0,
                                           cudaMemcpyHostToDevice, gpu.stream()));
    });
    gpu.launch("kernel", [&] {
      if (threads == kQueryBlockThreadsNarrow)
        launch<kQueryBlockThreadsNarrow>(gpu, p, first, count, soa.data(), ld, answers);
      else
        launch<kQueryBlockThreadsWide>(gpu, p, first, count, soa.data(), ld, answers);
    });
  }
  gpu.finish(answers, out, p.m);
  const int batches = knn::cuda::divup(p.m, batch_queries);
  if (batches > 1)
    gpu.add_path(fmt::format("batched: {} constant-memory batches of <= {} queries", batches, batch_queries));
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v6", "GPU fused kernel, SoA references, queries in constant memory",
                                   knn::Family::gpu, knn::GpuNeed::one, v6_query,
                                   [](const knn::Problem& p, const knn::Environment&) {
                                     return knn::gpu::float_bytes(p.reference_floats() +
                                                                 std::size_t(p.dim) *
                                                                     std::size_t(knn::gpu::quad_leading_dimension(p.n))) +
                                            knn::gpu::answer_bytes(p);
                                   },
                                   v6_supports);
}

}  // namespace

KNN_REGISTER_VERSION(describe());
