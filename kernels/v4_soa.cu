// v4: v3 after transposing the references from AoS (n × dim) to SoA (dim × n) on the device, so a
// warp's loads of one dimension for 32 consecutive references are one coalesced 128-byte access.
// The transpose is its own kernel and phase ("transpose"); the queries stay as they are (a block
// reads only its own query, which the cache broadcasts).
#include <cstddef>
#include <cstdint>

#include "kernels/common/argmin.cuh"
#include "kernels/common/gpu_frame.hpp"
#include "kernels/common/transpose.hpp"

namespace {

using knn::gpu::kSearchThreads;

// One block answers query blockIdx.x; one thread scans references threadIdx.x, +blockDim.x, ...,
// reading dimension t of reference j at soa[t·n + j], then joins the block tree.
__global__ void __launch_bounds__(kSearchThreads)
    fused_soa_kernel(int dim, int n, const float* __restrict__ queries, const float* __restrict__ soa,
                     std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  knn::gpu::with_block_query(queries + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    knn::gpu::block_answers_query(dim, n, query, knn::gpu::SoaReferences{soa, n}, blockIdx.x, indices, distances);
  });
}

void v4_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  const knn::gpu::DeviceProblem input = gpu.upload_problem(p);
  auto soa = gpu.alloc<float>(p.reference_floats());
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  knn::gpu::transpose_references(gpu, input.references.data(), p.n, p.dim, soa.data());
  gpu.launch("kernel", [&] {
    fused_soa_kernel<<<p.m, kSearchThreads, 0, gpu.stream()>>>(p.dim, p.n, input.queries.data(), soa.data(),
                                                               answers.indices.data(), answers.distances.data());
  });
  gpu.finish(answers, out, p.m);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v4", "GPU fused kernel on SoA references (AoS->SoA transpose first)",
                                   knn::Family::gpu, knn::GpuNeed::one, v4_query,
                                   [](const knn::Problem& p, const knn::Environment&) {
                                     return knn::gpu::float_bytes(p.query_floats() + 2 * p.reference_floats()) +
                                            knn::gpu::answer_bytes(p);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
