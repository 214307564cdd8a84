// v2: the distance matrix of v1, then thrust::min_element on each row, called from a host loop over
// the queries as the seeds do. Each call is a separate device reduction whose result thrust copies
// back, so the loop pays a launch and a synchronisation per query (its scratch comes from one arena per
// call rather than a cudaMalloc/cudaFree per query): slow for
// many queries by design, and kept that way. thrust returns the first of equal minima, which is v0's
// tie rule. After each batch the chosen columns go back to the device, where a small kernel fetches
// the distances the matrix holds for them. Row batches as in v1.
#include <thrust/execution_policy.h>
#include <thrust/extrema.h>

#include <cstddef>
#include <cstdint>

#include "kernels/argmin/distance_matrix.hpp"

namespace {

constexpr int kGatherThreads = 256;
constexpr std::size_t kScratchBytes = 1u << 20;

// thrust's temporary storage, carved from one buffer allocated once per call: without it every
// min_element call would cudaMalloc and cudaFree (a device-wide synchronisation) its scratch.
// Each call still launches its own reduction and waits for its result, as the seeds' loop does.
class ScratchArena {
 public:
  using value_type = char;
  ScratchArena(char* base, std::size_t bytes) : base_(base), bytes_(bytes) {}
  char* allocate(std::ptrdiff_t n) {
    const std::size_t aligned = (std::size_t(n) + 255) & ~std::size_t(255);
    if (offset_ + aligned > bytes_) throw knn::OutOfMemoryError("thrust scratch arena exhausted");
    char* p = base_ + offset_;
    offset_ += aligned;
    ++live_;
    return p;
  }
  void deallocate(char*, std::size_t) {
    if (--live_ == 0) offset_ = 0;
  }

 private:
  char* base_;
  std::size_t bytes_;
  std::size_t offset_ = 0;
  int live_ = 0;
};

// One thread per row of the batch: reads the distance at the column thrust chose for that row.
__global__ void gather_distances_kernel(int n, int rows, const float* __restrict__ matrix,
                                        const std::int32_t* __restrict__ columns, float* __restrict__ distances) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < rows) distances[r] = matrix[r * n + columns[r]];
}

void v2_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::run_distance_matrix_version(
      p, out, ctx,
      [&p, out](knn::gpu::SingleGpu& gpu, const float* matrix, int first_row, int rows, knn::gpu::DeviceAnswers& a) {
        knn::cuda::DeviceBuffer<char> scratch = gpu.alloc<char>(kScratchBytes);
        ScratchArena arena(scratch.data(), scratch.size());
        const auto policy = thrust::cuda::par(arena).on(gpu.stream());
        for (int r = 0; r < rows; ++r) {
          const float* row = matrix + std::size_t(r) * std::size_t(p.n);
          out.indices[first_row + r] = std::int32_t(thrust::min_element(policy, row, row + p.n) - row);
        }
        std::int32_t* columns = a.indices.data() + first_row;
        KNN_CUDA_TRY(cudaMemcpyAsync(columns, out.indices + first_row, std::size_t(rows) * sizeof(std::int32_t),
                                     cudaMemcpyHostToDevice, gpu.stream()));
        gather_distances_kernel<<<knn::cuda::divup(rows, kGatherThreads), kGatherThreads, 0, gpu.stream()>>>(
            p.n, rows, matrix, columns, a.distances.data() + first_row);
        KNN_CUDA_CHECK_LAUNCH();
      });
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v2", "GPU distance matrix + thrust::min_element per query (host loop)",
                                   knn::Family::gpu, knn::GpuNeed::one, v2_query,
                                   knn::gpu::distance_matrix_device_bytes);
}

}  // namespace

KNN_REGISTER_VERSION(describe());
