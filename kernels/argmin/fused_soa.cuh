#pragma once
// v4's kernel and host path (kernels/argmin/v4_soa.cu), shared with the test-only t8, which runs them with
// more of the same work (tests/versions/t8_v4_slowed.cu). With kRescan = false (v4) the kernel is
// v4's and nothing else: the rescan is compiled out.
#include <cstddef>
#include <cstdint>

#include "kernels/argmin/argmin.cuh"
#include "kernels/argmin/gpu_frame.hpp"
#include "kernels/argmin/transpose.hpp"

namespace knn::gpu {

// One block answers query blockIdx.x; one thread scans quads threadIdx.x, +kThreads, ... (references
// 4i .. 4i+3, dimension t at soa[t·ld + 4i ...]), then the last n % 4 references, then joins the tree.
// kRescan: the thread then scans references 0 .. rescan_n - 1 (a multiple of 4, at most n) a second
// time, as its own share of them, and merges that candidate into its first: the same references with
// the same arithmetic, a subset of its share, so the merge never changes the candidate.
template <int kThreads, bool kRescan>
__global__ void __launch_bounds__(kThreads, query_block_min_blocks(kThreads))
    fused_soa_kernel(int dim, int n, long long ld, const float* __restrict__ queries, const float* __restrict__ soa,
                     std::int32_t* __restrict__ indices, float* __restrict__ distances, int rescan_n) {
  with_block_query(queries + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    Candidate c = scan_soa_quads<kThreads>(dim, query, SoaQuadReferences{soa, ld}, n);
    if constexpr (kRescan) {
      const Candidate again = scan_soa_quads<kThreads>(dim, query, SoaQuadReferences{soa, ld}, rescan_n);
      if (precedes(again, c)) c = again;
    }
    block_store_answer<kThreads>(c, blockIdx.x, indices, distances);
  });
}

// Device bytes of one call: queries, references, their SoA copy and the answers.
inline std::size_t fused_soa_device_bytes(const Problem& p) {
  return float_bytes(p.query_floats() + p.reference_floats() +
                     std::size_t(p.dim) * std::size_t(quad_leading_dimension(p.n))) +
         answer_bytes(p);
}

// v4 on the first selected GPU: uploads queries and references ("h2d"), transposes the references
// to SoA ("transpose"), runs the kernel with query_block_threads' block size ("kernel") and
// downloads the answers ("d2h"). kRescan (t8): the first rescan_n references are uploaded a second
// time (the same bytes to the same place, also "h2d") and the kernel rescans them, so the copy and
// the kernel both grow by that share.
template <bool kRescan = false>
void run_fused_soa(const Problem& p, Neighbors out, RunContext& ctx, int rescan_n = 0) {
  SingleGpu gpu(ctx);
  DeviceProblem input = gpu.upload_problem(p);
  if constexpr (kRescan) gpu.copy_to_device(input.references.data(), p.references, std::size_t(rescan_n) * p.dim);
  const long long ld = quad_leading_dimension(p.n);
  auto soa = gpu.alloc<float>(std::size_t(p.dim) * std::size_t(ld));
  DeviceAnswers answers = gpu.alloc_answers(p.m);
  transpose_references(gpu, input.references.data(), p.n, p.dim, soa.data(), ld);
  const int threads = gpu.query_block_threads(p.m, fused_soa_kernel<kQueryBlockThreadsNarrow, kRescan>,
                                              kQueryBlockThreadsNarrow, kQueryBlockThreadsWide);
  gpu.launch("kernel", [&] {
    const auto kernel = threads == kQueryBlockThreadsNarrow ? fused_soa_kernel<kQueryBlockThreadsNarrow, kRescan>
                                                            : fused_soa_kernel<kQueryBlockThreadsWide, kRescan>;
    kernel<<<p.m, threads, 0, gpu.stream()>>>(p.dim, p.n, ld, input.queries.data(), soa.data(),
                                              answers.indices.data(), answers.distances.data(), rescan_n);
  });
  gpu.finish(answers, out, p.m);
}

}  // namespace knn::gpu
