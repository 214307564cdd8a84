// v6: v4 (SoA references) with the queries in __constant__ memory. All threads of a block read the
// same query float at the same time, which the constant cache serves as one broadcast.
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

#include "kernels/common/argmin.cuh"
#include "kernels/common/gpu_frame.hpp"
#include "kernels/common/transpose.hpp"

namespace {

using knn::gpu::kSearchThreads;

constexpr int kConstantQueryFloats = 16384;  // 64 KiB of float
__constant__ float c_queries[kConstantQueryFloats];

// Query q of the current batch: its dim floats at c_queries[q·dim ...].
struct ConstantQuery {
  int offset;
  __device__ __forceinline__ float operator()(int t) const { return c_queries[offset + t]; }
};

// One block answers query blockIdx.x of the batch (query first_query + blockIdx.x overall); one
// thread scans references threadIdx.x, +blockDim.x, ... in the SoA array, then joins the block tree.
__global__ void __launch_bounds__(kSearchThreads)
    constant_query_kernel(int dim, int n, int first_query, const float* __restrict__ soa,
                          std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  const ConstantQuery query{static_cast<int>(blockIdx.x) * dim};
  knn::gpu::block_answers_query(dim, n, query, knn::gpu::SoaReferences{soa, n},
                                static_cast<long long>(first_query) + blockIdx.x, indices, distances);
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
  auto soa = gpu.alloc<float>(p.reference_floats());
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  knn::gpu::transpose_references(gpu, references.data(), p.n, p.dim, soa.data());

  const int batch_queries = kConstantQueryFloats / p.dim;
  for (int first = 0; first < p.m; first += batch_queries) {
    const int count = std::min(batch_queries, p.m - first);
    gpu.timed("h2d", [&] {
      KNN_CUDA_TRY(cudaMemcpyToSymbolAsync(c_queries, p.queries + std::size_t(first) * std::size_t(p.dim),
                                           std::size_t(count) * std::size_t(p.dim) * sizeof(float), 0,
                                           cudaMemcpyHostToDevice, gpu.stream()));
    });
    gpu.launch("kernel", [&] {
      constant_query_kernel<<<count, kSearchThreads, 0, gpu.stream()>>>(p.dim, p.n, first, soa.data(),
                                                                        answers.indices.data(),
                                                                        answers.distances.data());
    });
  }
  gpu.finish(answers, out, p.m);
  const int batches = knn::cuda::divup(p.m, batch_queries);
  if (batches > 1)
    ctx.path = fmt::format("batched: {} constant-memory batches of <= {} queries", batches, batch_queries);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v6", "GPU fused kernel, SoA references, queries in constant memory",
                                   knn::Family::gpu, knn::GpuNeed::one, v6_query,
                                   [](const knn::Problem& p, const knn::Environment&) {
                                     return knn::gpu::float_bytes(2 * p.reference_floats()) + knn::gpu::answer_bytes(p);
                                   },
                                   v6_supports);
}

}  // namespace

KNN_REGISTER_VERSION(describe());
