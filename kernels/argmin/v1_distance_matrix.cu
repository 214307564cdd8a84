// v1: the GPU baseline in two kernels. The first writes the m × n matrix of squared distances to
// global memory (kernels/argmin/distance_matrix.cu); the second finds each row's argmin with one
// block per query: a strided per-thread minimum, then a shared-memory tree over (distance, index).
// When the matrix does not fit the free device memory, the queries go in row batches (ctx.path says
// how many); when not even one row fits, it throws knn::OutOfMemoryError, which the harness records
// as a skip.
#include <cstddef>
#include <cstdint>

#include "kernels/argmin/argmin.cuh"
#include "kernels/argmin/distance_matrix.hpp"

namespace {

using knn::gpu::kSearchThreads;

// One block finds the argmin of one matrix row (query first_row + blockIdx.x); each thread keeps the
// first minimum of entries threadIdx.x, +blockDim.x, ... (coalesced reads), then the block tree
// reduces the threads' (distance, index) pairs and thread 0 stores the answer.
__global__ void __launch_bounds__(kSearchThreads)
    row_argmin_kernel(int n, const float* __restrict__ matrix, int first_row, std::int32_t* __restrict__ indices,
                      float* __restrict__ distances) {
  const float* row = matrix + std::size_t(blockIdx.x) * std::size_t(n);
  const knn::gpu::Candidate c = knn::gpu::scan_references(knn::gpu::no_candidate(), threadIdx.x, n, blockDim.x, 0,
                                                          [row](long long j) { return __ldg(row + j); });
  knn::gpu::block_store_answer(c, static_cast<long long>(first_row) + blockIdx.x, indices, distances);
}

void v1_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::run_distance_matrix_version(
      p, out, ctx,
      [n = p.n](knn::gpu::SingleGpu& gpu, const float* matrix, int first_row, int rows, knn::gpu::DeviceAnswers& a) {
        row_argmin_kernel<<<rows, kSearchThreads, 0, gpu.stream()>>>(n, matrix, first_row, a.indices.data(),
                                                                    a.distances.data());
        KNN_CUDA_CHECK_LAUNCH();
      });
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v1", "GPU distance matrix + shared-memory tree argmin (one block per query)",
                                   knn::Family::gpu, knn::GpuNeed::one, v1_query,
                                   knn::gpu::distance_matrix_device_bytes);
}

}  // namespace

KNN_REGISTER_VERSION(describe());
