// v4: v3 after transposing the references from AoS (n × dim) to SoA (dim × ld) on the device, so a
// warp's loads of one dimension for consecutive references are coalesced. The transpose is its own
// kernel and phase ("transpose"); the queries stay as they are (a block reads only its own query,
// which it stages in shared memory). ld is n rounded up to 4, so each dimension of four consecutive
// references is one 16-byte load: the layout makes those wide loads possible, where v3's rows do
// not. Block size and references per step as v3 (argmin.cuh).
#include <cstddef>
#include <cstdint>

#include "kernels/common/argmin.cuh"
#include "kernels/common/gpu_frame.hpp"
#include "kernels/common/transpose.hpp"

namespace {

using knn::gpu::kQueryBlockThreadsNarrow;
using knn::gpu::kQueryBlockThreadsWide;

// One block answers query blockIdx.x; one thread scans quads threadIdx.x, +kThreads, ... (references
// 4i .. 4i+3, dimension t at soa[t·ld + 4i ...]), then the last n % 4 references, then joins the tree.
template <int kThreads>
__global__ void __launch_bounds__(kThreads, knn::gpu::query_block_min_blocks(kThreads))
    fused_soa_kernel(int dim, int n, long long ld, const float* __restrict__ queries, const float* __restrict__ soa,
                     std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  knn::gpu::with_block_query(queries + std::size_t(blockIdx.x) * std::size_t(dim), dim, [&](const auto& query) {
    const knn::gpu::Candidate c = knn::gpu::scan_soa_quads<kThreads>(dim, query, knn::gpu::SoaQuadReferences{soa, ld}, n);
    knn::gpu::block_store_answer<kThreads>(c, blockIdx.x, indices, distances);
  });
}

template <int kThreads>
void launch(knn::gpu::SingleGpu& gpu, const knn::Problem& p, const float* queries, const float* soa, long long ld,
            const knn::gpu::DeviceAnswers& answers) {
  fused_soa_kernel<kThreads><<<p.m, kThreads, 0, gpu.stream()>>>(p.dim, p.n, ld, queries, soa, answers.indices.data(),
                                                                 answers.distances.data());
}

void v4_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::SingleGpu gpu(ctx);
  const knn::gpu::DeviceProblem input = gpu.upload_problem(p);
  const long long ld = knn::gpu::quad_leading_dimension(p.n);
  auto soa = gpu.alloc<float>(std::size_t(p.dim) * std::size_t(ld));
  knn::gpu::DeviceAnswers answers = gpu.alloc_answers(p.m);
  knn::gpu::transpose_references(gpu, input.references.data(), p.n, p.dim, soa.data(), ld);
  const int threads = gpu.query_block_threads(p.m, fused_soa_kernel<kQueryBlockThreadsNarrow>,
                                              kQueryBlockThreadsNarrow, kQueryBlockThreadsWide);
  gpu.launch("kernel", [&] {
    if (threads == kQueryBlockThreadsNarrow)
      launch<kQueryBlockThreadsNarrow>(gpu, p, input.queries.data(), soa.data(), ld, answers);
    else
      launch<kQueryBlockThreadsWide>(gpu, p, input.queries.data(), soa.data(), ld, answers);
  });
  gpu.finish(answers, out, p.m);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v4", "GPU fused kernel on SoA references (AoS->SoA transpose first)",
                                   knn::Family::gpu, knn::GpuNeed::one, v4_query,
                                   [](const knn::Problem& p, const knn::Environment&) {
                                     return knn::gpu::float_bytes(p.query_floats() + p.reference_floats() +
                                                                 std::size_t(p.dim) *
                                                                     std::size_t(knn::gpu::quad_leading_dimension(p.n))) +
                                            knn::gpu::answer_bytes(p);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
