// v3: distances and argmin fused in one kernel, one block per query: no distance matrix, one launch.
// Each thread computes the distances to its strided share of the references, keeping its first
// minimum, and the block tree reduces the (distance, index) pairs. References are read as stored
// (array of structures), so a warp's loads of one dimension are dim floats apart. Block size and
// references loaded per step follow argmin.cuh: 256 or 1024 threads and 4 references for rows of up
// to 4 floats, the seeds' 1024 threads and one reference for longer rows.
#include <cstddef>
#include <cstdint>

#include "kernels/common/argmin.cuh"
#include "kernels/common/gpu_frame.hpp"

namespace {

using knn::gpu::kRefsPerStep;
constexpr int kNarrow = knn::gpu::kQueryBlockThreadsNarrow;
constexpr int kWide = knn::gpu::kQueryBlockThreadsWide;

// One block answers query blockIdx.x; one thread scans references threadIdx.x, +kThreads, ...,
// reading reference j's dim floats at references[j·dim ...], then joins the block tree.
template <int kThreads, int kRefs>
__global__ void __launch_bounds__(kThreads)
    fused_aos_kernel(int dim, int n, const float* __restrict__ queries, const float* __restrict__ references,
                     std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  knn::gpu::with_block_query(queries + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    const knn::gpu::Candidate c = knn::gpu::scan_strided<kRefs>(dim, query, knn::gpu::AosReferences{references, dim},
                                                         threadIdx.x, n, kThreads);
    knn::gpu::block_store_answer<kThreads>(c, blockIdx.x, indices, distances);
  });
}

template <int kThreads, int kRefs>
void launch(knn::gpu::SingleGpu& gpu, const knn::Problem& p, const float* queries, const float* references,
            const knn::gpu::DeviceAnswers& answers) {
  fused_aos_kernel<kThreads, kRefs><<<p.m, kThreads, 0, gpu.stream()>>>(p.dim, p.n, queries, references,
                                                                 answers.indices.data(), answers.distances.data());
}

void v3_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  const knn::gpu::DeviceProblem input = gpu.upload_problem(p);
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  const char* long_rows = knn::gpu::wide_row_reason(p.dim);
  const int threads = gpu.query_block_threads(p.m, fused_aos_kernel<kNarrow, kRefsPerStep>, kNarrow, kWide, long_rows);
  const float* queries = input.queries.data();
  const float* references = input.references.data();
  gpu.launch("kernel", [&] {
    if (long_rows != nullptr)
      launch<kWide, knn::gpu::kLongRowRefsPerStep>(gpu, p, queries, references, answers);
    else if (threads == kNarrow)
      launch<kNarrow, kRefsPerStep>(gpu, p, queries, references, answers);
    else
      launch<kWide, kRefsPerStep>(gpu, p, queries, references, answers);
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
