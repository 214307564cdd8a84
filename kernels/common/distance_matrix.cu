// The distance matrix of v1 and v2 (the seeds' get_dis_kernel): one thread per (query, reference)
// pair, every distance written to global memory before any reduction looks at it.
#include "kernels/common/distance_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "errors.hpp"
#include "kernels/common/argmin.cuh"

namespace knn::gpu {
namespace {

constexpr int kColumnsPerBlock = 32;  // references: consecutive threads write consecutive matrix entries
constexpr int kRowsPerBlock = 8;      // queries
constexpr int kMaxGridRows = 65535;   // gridDim.y limit; the row loop covers the rest
// Left free for the CUDA context, the library's temporary storage (thrust in v2) and fragmentation.
constexpr std::size_t kReserveBytes = std::size_t(256) << 20;

// A block covers 32 consecutive references × 8 query rows; one thread computes the squared distance
// from its reference to each query row it visits (rows threadIdx.y + blockIdx.y·8, then a stride of
// the grid's height) and writes it to matrix[row · n + reference].
__global__ void distance_matrix_kernel(int dim, int rows, int n, const float* __restrict__ queries,
                                       const float* __restrict__ references, float* __restrict__ matrix) {
  const long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const AosReferences refs{references, dim};
  const long long stride = static_cast<long long>(gridDim.y) * blockDim.y;
  for (long long r = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows; r += stride)
    matrix[r * n + j] = squared_distance(dim, GlobalQuery{queries + r * dim}, refs, j);
}

// Query rows per batch so that the batch's matrix fits the free device memory.
int rows_per_batch(const Problem& p, RunContext& ctx) {
  std::size_t free_bytes = 0, total_bytes = 0;
  KNN_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t row_bytes = std::size_t(p.n) * sizeof(float);
  const std::size_t budget = free_bytes > kReserveBytes ? free_bytes - kReserveBytes : 0;
  const std::size_t fit = budget / row_bytes;
  constexpr double kMiB = 1024.0 * 1024.0;
  if (fit < 1)
    throw OutOfMemoryError(fmt::format(
        "distance matrix: one row of n={} floats ({:.1f} MiB) does not fit in {:.1f} MiB of free device memory "
        "(less a {:.0f} MiB reserve)",
        p.n, double(row_bytes) / kMiB, double(free_bytes) / kMiB, double(kReserveBytes) / kMiB));
  const int rows = int(std::min<std::size_t>(fit, std::size_t(p.m)));
  if (rows < p.m)
    ctx.path = fmt::format("batched: {} distance-matrix batches of <= {} query rows (the {}x{} matrix, {:.2f} GiB, "
                           "exceeds {:.2f} GiB free less the reserve)",
                           cuda::divup(p.m, rows), rows, p.m, p.n, double(row_bytes) * p.m / (kMiB * 1024.0),
                           double(budget) / (kMiB * 1024.0));
  return rows;
}

}  // namespace

std::size_t distance_matrix_device_bytes(const Problem& p, const Environment& /*env*/) {
  return float_bytes(p.query_floats() + p.reference_floats() + std::size_t(p.n)) + answer_bytes(p) + kReserveBytes;
}

void run_distance_matrix_version(const Problem& p, Neighbors out, RunContext& ctx, const ReduceRows& reduce_rows) {
  SingleGpu gpu(ctx);
  const DeviceProblem input = gpu.upload_problem(p);
  DeviceAnswers answers = gpu.alloc_answers(p.m);
  const int batch_rows = rows_per_batch(p, ctx);
  auto matrix = gpu.alloc<float>(std::size_t(batch_rows) * std::size_t(p.n));

  const dim3 block(kColumnsPerBlock, kRowsPerBlock);
  for (int first = 0; first < p.m; first += batch_rows) {
    const int rows = std::min(batch_rows, p.m - first);
    const dim3 grid(cuda::divup(p.n, kColumnsPerBlock), std::min(cuda::divup(rows, kRowsPerBlock), kMaxGridRows));
    const float* batch_queries = input.queries.data() + std::size_t(first) * std::size_t(p.dim);
    gpu.launch("distances", [&] {
      distance_matrix_kernel<<<grid, block, 0, gpu.stream()>>>(p.dim, rows, p.n, batch_queries,
                                                              input.references.data(), matrix.data());
    });
    gpu.timed("reduce", [&] { reduce_rows(gpu, matrix.data(), first, rows, answers); });
  }
  gpu.finish(answers, out, p.m);
}

}  // namespace knn::gpu
