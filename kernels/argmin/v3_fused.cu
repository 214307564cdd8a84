// v3: distances and argmin fused in one kernel, one block per query: no distance matrix, one launch.
// Each thread computes the distances to its strided share of the references, keeping its first
// minimum, and the block tree reduces the (distance, index) pairs. References are read as stored
// (array of structures), so a warp's loads of one dimension are dim floats apart. Block size and
// references loaded per step follow argmin.cuh: rows of up to 4 floats take 256 or 1024 threads and
// 4 references per step; longer rows of whole float4s (k % 4 == 0) are read a float4 at a time,
// 256 or 1024 threads and 2 references per step; other long rows keep the seeds' 1024 threads and
// one reference per step. The result's path says which.
#include <cstddef>
#include <cstdint>

#include <fmt/format.h>

#include "kernels/argmin/argmin.cuh"
#include "kernels/argmin/gpu_frame.hpp"

namespace {

using knn::gpu::kRefsPerStep;
constexpr int kNarrow = knn::gpu::kQueryBlockThreadsNarrow;
constexpr int kWide = knn::gpu::kQueryBlockThreadsWide;

// How a thread reads its references: scalar loads of each row (any dim), or float4s (dim % 4 == 0).
enum class Rows { scalar, vec4 };

// One block answers query blockIdx.x; one thread scans references threadIdx.x, +kThreads, ...,
// reading reference j's dim floats at references[j·dim ...], then joins the block tree.
template <int kThreads, int kRefs, Rows kRows>
__global__ void __launch_bounds__(kThreads, knn::gpu::query_block_min_blocks(kThreads))
    fused_aos_kernel(int dim, int n, const float* __restrict__ queries, const float* __restrict__ references,
                     std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  knn::gpu::with_block_query(queries + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    knn::gpu::Candidate c;
    if constexpr (kRows == Rows::vec4)
      c = knn::gpu::scan_strided_vec4<kRefs>(dim, query, knn::gpu::AosVec4References{references, dim}, threadIdx.x, n,
                                             kThreads);
    else
      c = knn::gpu::scan_strided<kRefs>(dim, query, knn::gpu::AosReferences{references, dim}, threadIdx.x, n, kThreads);
    knn::gpu::block_store_answer<kThreads>(c, blockIdx.x, indices, distances);
  });
}

template <int kThreads, int kRefs, Rows kRows>
void launch(knn::gpu::SingleGpu& gpu, const knn::Problem& p, const float* queries, const float* references,
            const knn::gpu::DeviceAnswers& answers) {
  fused_aos_kernel<kThreads, kRefs, kRows><<<p.m, kThreads, 0, gpu.stream()>>>(
      p.dim, p.n, queries, references, answers.indices.data(), answers.distances.data());
}

// The launch for rows read as kRows with kRefs per step: narrow or wide blocks as query_block_threads
// chooses.
template <int kRefs, Rows kRows>
void run_scan(knn::gpu::SingleGpu& gpu, const knn::Problem& p, const float* queries, const float* references,
              const knn::gpu::DeviceAnswers& answers) {
  const int threads = gpu.query_block_threads(p.m, fused_aos_kernel<kNarrow, kRefs, kRows>, kNarrow, kWide);
  gpu.launch("kernel", [&] {
    if (threads == kNarrow)
      launch<kNarrow, kRefs, kRows>(gpu, p, queries, references, answers);
    else
      launch<kWide, kRefs, kRows>(gpu, p, queries, references, answers);
  });
}

void v3_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  const knn::gpu::DeviceProblem input = gpu.upload_problem(p);
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  const float* queries = input.queries.data();
  const float* references = input.references.data();
  const char* long_rows = knn::gpu::wide_row_reason(p.dim);
  if (long_rows == nullptr) {
    run_scan<kRefsPerStep, Rows::scalar>(gpu, p, queries, references, answers);
  } else if (knn::gpu::vec4_rows_fit(references, p.dim)) {
    run_scan<knn::gpu::kVec4RowRefsPerStep, Rows::vec4>(gpu, p, queries, references, answers);
    gpu.add_path(fmt::format("rows read as {} float4s", p.dim / 4));
  } else {
    gpu.wide_query_blocks(kWide, long_rows);
    gpu.launch("kernel", [&] {
      launch<kWide, knn::gpu::kLongRowRefsPerStep, Rows::scalar>(gpu, p, queries, references, answers);
    });
  }
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
