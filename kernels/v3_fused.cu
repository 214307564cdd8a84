// v3: distances and argmin fused in one kernel, one block per query: no distance matrix, one launch.
// Each thread computes the distances to its strided share of the references, keeping its first
// minimum, and the block tree reduces the (distance, index) pairs. References are read as stored
// (array of structures), so a warp's loads of one dimension are dim floats apart.
#include <cstddef>
#include <cstdint>

#include "kernels/common/argmin.cuh"
#include "kernels/common/gpu_frame.hpp"

namespace {

using knn::gpu::kSearchThreads;

// One block answers query blockIdx.x; one thread scans references threadIdx.x, +blockDim.x, ...,
// reading reference j's dim floats at references[j·dim ...], then joins the block tree.
__global__ void __launch_bounds__(kSearchThreads)
    fused_aos_kernel(int dim, int n, const float* __restrict__ queries, const float* __restrict__ references,
                     std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  knn::gpu::with_block_query(queries + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    knn::gpu::block_answers_query(dim, n, query, knn::gpu::AosReferences{references, dim}, blockIdx.x, indices, distances);
  });
}

void v3_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  const knn::gpu::DeviceProblem input = gpu.upload_problem(p);
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  gpu.launch("kernel", [&] {
    fused_aos_kernel<<<p.m, kSearchThreads, 0, gpu.stream()>>>(p.dim, p.n, input.queries.data(),
                                                               input.references.data(), answers.indices.data(),
                                                               answers.distances.data());
  });
  gpu.finish(answers, out, p.m);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v3", "GPU fused distance + block argmin (one block per query, AoS references)",
                                   knn::Family::gpu, knn::GpuNeed::one, v3_query,
                                   [](const knn::Problem& p, const knn::Environment&) {
                                     return knn::gpu::float_bytes(p.query_floats() + p.reference_floats()) +
                                            knn::gpu::answer_bytes(p);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
