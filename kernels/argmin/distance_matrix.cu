// The distance matrix of v1 and v2 (the seeds' get_dis_kernel): every (query, reference) distance is
// written to global memory before any reduction looks at it. A thread owns one reference and about 16
// query rows (one pair per thread made 2^30 threads in 4M short blocks for m=1024, n=2^20: the GPU
// spent its time starting blocks), and a block stages its 32 references in shared memory once.
#include "kernels/argmin/distance_matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "core/errors.hpp"
#include "kernels/argmin/argmin.cuh"

namespace knn::gpu {
namespace {

constexpr int kColumnsPerBlock = 32;  // references: consecutive threads write consecutive matrix entries
constexpr int kRowsPerBlock = 8;      // query rows per block step
constexpr int kRowsPerThread = 16;    // a thread writes up to this many rows (fewer, shorter-lived blocks)
constexpr int kMaxGridRows = 65535;   // gridDim.y limit; the row loop covers the rest
constexpr std::size_t kMaxStagedBytes = 48 * 1024;  // dynamic shared memory without an opt-in
// Left free for the CUDA context, the library's temporary storage (thrust in v2) and fragmentation.
constexpr std::size_t kReserveBytes = std::size_t(256) << 20;

// Reference j's row staged in shared memory (see distance_matrix_kernel).
struct StagedReference {
  const float* row;
  __device__ __forceinline__ float operator()(long long, int t) const { return row[t]; }
};

// A block covers 32 consecutive references × 8 query rows per step; one thread computes the squared
// distance from its reference to each query row it visits (rows threadIdx.y + blockIdx.y·8, then a
// stride of the grid's height, about 16 rows per thread) and writes it to matrix[row · n + reference].
//
// With staged_stride > 0 the block first copies its 32 references (32·dim contiguous floats of the
// AoS array) into shared memory with coalesced loads, one row of staged_stride floats each (dim rounded
// up to odd, so the 32 threads reading dimension t hit 32 different banks); every row then reads the
// reference from there instead of making strided global loads per row. The arithmetic is the same.
__global__ void distance_matrix_kernel(int dim, int rows, int n, int staged_stride, const float* __restrict__ queries,
                                       const float* __restrict__ references, float* __restrict__ matrix) {
  extern __shared__ float s_references[];
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x;
  const long long j = first + threadIdx.x;
  if (staged_stride > 0) {
    const int tile_floats = static_cast<int>(min(static_cast<long long>(blockDim.x), n - first)) * dim;
    const float* tile = references + first * dim;
    for (int f = threadIdx.y * blockDim.x + threadIdx.x; f < tile_floats; f += blockDim.x * blockDim.y) {
      const int r = f / dim;
      s_references[r * staged_stride + (f - r * dim)] = __ldg(tile + f);
    }
    __syncthreads();
  }
  if (j >= n) return;  // after the barrier: every thread of the block took part in the staging
  const long long stride = static_cast<long long>(gridDim.y) * blockDim.y;
  const long long row0 = static_cast<long long>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (staged_stride > 0) {
    const StagedReference ref{s_references + threadIdx.x * staged_stride};
    for (long long r = row0; r < rows; r += stride)
      matrix[r * n + j] = squared_distance(dim, GlobalQuery{queries + r * dim}, ref, j);
  } else {
    const AosReferences refs{references, dim};
    for (long long r = row0; r < rows; r += stride)
      matrix[r * n + j] = squared_distance(dim, GlobalQuery{queries + r * dim}, refs, j);
  }
}

// Floats per staged reference row (dim rounded up to odd), or 0 when 32 rows exceed kMaxStagedBytes.
int staged_stride(int dim) {
  const int stride = dim | 1;
  return std::size_t(kColumnsPerBlock) * std::size_t(stride) * sizeof(float) <= kMaxStagedBytes ? stride : 0;
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
  const int stride = staged_stride(p.dim);
  const std::size_t shared_bytes = std::size_t(kColumnsPerBlock) * std::size_t(stride) * sizeof(float);
  for (int first = 0; first < p.m; first += batch_rows) {
    const int rows = std::min(batch_rows, p.m - first);
    const dim3 grid(cuda::divup(p.n, kColumnsPerBlock),
                    std::min(cuda::divup(rows, kRowsPerBlock * kRowsPerThread), kMaxGridRows));
    const float* batch_queries = input.queries.data() + std::size_t(first) * std::size_t(p.dim);
    gpu.launch("distances", [&] {
      distance_matrix_kernel<<<grid, block, shared_bytes, gpu.stream()>>>(
          p.dim, rows, p.n, stride, batch_queries, input.references.data(), matrix.data());
    });
    gpu.timed("reduce", [&] { reduce_rows(gpu, matrix.data(), first, rows, answers); });
  }
  gpu.finish(answers, out, p.m);
}

}  // namespace knn::gpu
