// Test-only version, linked into knnbench-testbin and never into knnbench: v3's fused kernel with
// the launch geometry of the seeds' v3-v6, to measure what their published figures measured.
//
// The seeds launch their one-block-per-query kernels on a one-dimensional grid of m blocks but take
// the query row from blockIdx.y, which is then always 0, and start each thread at
// blockIdx.x * 1024 + threadIdx.x. Their v1 reduction kernel, printed whole, then steps by
// gridDim.x * 1024; the v3 loop's increment is cut off in the printed text and is taken to be the
// same. So block b compares query 0 with references b*1024 + t, b*1024 + t + m*1024, ...: n distance
// evaluations in all instead of m*n, and for m > 1 every answer but query 0's own block is wrong.
// This version therefore fails validation, as the seeds' code would. Its scan is v3's for rows of up
// to 4 floats (scan_strided, four references per step; v3 reads longer rows of whole float4s with
// scan_strided_vec4) with the seeds' 1024 threads per block. Run it beside v3:
//   knnbench-testbin --version v3,t6 --case 10,11 [--host-memory pageable]
#include <cstddef>
#include <cstdint>

#include "kernels/argmin/argmin.cuh"
#include "kernels/argmin/gpu_frame.hpp"

namespace {

using knn::gpu::kSearchThreads;

__global__ void __launch_bounds__(kSearchThreads)
    seed_geometry_kernel(int dim, int n, const float* __restrict__ queries, const float* __restrict__ references,
                         std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  knn::gpu::with_block_query(queries, dim, [&](const auto& query) {  // row blockIdx.y = 0
    const knn::gpu::AosReferences refs{references, dim};
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    const knn::gpu::Candidate c = knn::gpu::scan_strided<knn::gpu::kRefsPerStep>(dim, query, refs, first, n, stride);
    knn::gpu::block_store_answer(c, blockIdx.x, indices, distances);
  });
}

void t6_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  const knn::gpu::DeviceProblem input = gpu.upload_problem(p);
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  gpu.launch("kernel", [&] {
    seed_geometry_kernel<<<p.m, kSearchThreads, 0, gpu.stream()>>>(p.dim, p.n, input.queries.data(),
                                                                   input.references.data(), answers.indices.data(),
                                                                   answers.distances.data());
  });
  gpu.finish(answers, out, p.m);
  ctx.path = "test only: the seeds' v3 geometry, n distance evaluations against query 0 (answers wrong for m > 1)";
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("t6", "test only: v3 with the seeds' v3-v6 launch geometry (does 1/m of the work)",
                                   knn::Family::gpu, knn::GpuNeed::one, t6_query,
                                   [](const knn::Problem& p, const knn::Environment&) {
                                     return knn::gpu::float_bytes(p.query_floats() + p.reference_floats()) +
                                            knn::gpu::answer_bytes(p);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
