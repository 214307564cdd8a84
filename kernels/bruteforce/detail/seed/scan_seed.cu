// ScanSeed: the references' range per dimension, Morton codes, CUB's radix sort, and one thread
// per query for its window's bound (kernels/bruteforce/detail/seed/scan_seed.hpp says what the bound is for).
#include "kernels/bruteforce/detail/seed/scan_seed_device.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

#include "core/cuda/device.hpp"
#include "core/cuda/error.hpp"
#include "kernels/device/warp_reduce.cuh"

namespace knn::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxList = kSeedMaxTopk;

// A float's bits in an order that unsigned comparison keeps (for atomicMin/atomicMax).
__device__ __forceinline__ unsigned ordered(float x) {
  const unsigned b = __float_as_uint(x);
  return (b & 0x80000000u) ? ~b : b | 0x80000000u;
}
__device__ __forceinline__ float unordered(unsigned u) { return __uint_as_float((u & 0x80000000u) ? u & 0x7fffffffu : ~u); }


// range[t] = the least value of dimension t, range[dim + t] the greatest (ordered bits; the
// buffer starts at 0xff.. and 0 respectively). Every thread of the grid reaches the shuffles.
__global__ void range_kernel(const float* __restrict__ points, int count, int dim, unsigned* __restrict__ range) {
  unsigned lo[kSeedMaxDim], hi[kSeedMaxDim];
#pragma unroll
  for (int t = 0; t < kSeedMaxDim; ++t) lo[t] = 0xffffffffu, hi[t] = 0u;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x)
#pragma unroll
    for (int t = 0; t < kSeedMaxDim; ++t)
      if (t < dim) {
        const unsigned v = ordered(points[i * dim + t]);
        lo[t] = min(lo[t], v), hi[t] = max(hi[t], v);
      }
#pragma unroll
  for (int t = 0; t < kSeedMaxDim; ++t) {
    if (t >= dim) break;
    const unsigned l = knn::gpu::warp::min(lo[t]), h = knn::gpu::warp::max(hi[t]);
    if (threadIdx.x % 32 == 0) atomicMin(range + t, l), atomicMax(range + dim + t, h);
  }
}

// Bits per dimension of a Morton code (at most 63 bits in all, at most 21 per dimension).
__host__ __device__ constexpr int code_bits(int dim) { return 63 / dim < 21 ? 63 / dim : 21; }

// Each point's Morton code within the references' range (points outside it are clamped to the
// nearest cell) and its own index.
__global__ void codes_kernel(const float* __restrict__ points, int count, int dim, const unsigned* __restrict__ range,
                             unsigned long long* __restrict__ codes, std::int32_t* __restrict__ index) {
  const int bits = code_bits(dim);
  const float cells = float(1u << bits);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {
    unsigned cell[kSeedMaxDim];
#pragma unroll
    for (int t = 0; t < kSeedMaxDim; ++t) {
      if (t >= dim) break;
      const float lo = unordered(range[t]), span = unordered(range[dim + t]) - lo;
      const float x = span > 0.f ? (points[i * dim + t] - lo) / span * cells : 0.f;
      cell[t] = unsigned(fminf(fmaxf(x, 0.f), cells - 1.f));
    }
    unsigned long long code = 0;
    for (int b = bits - 1; b >= 0; --b)
#pragma unroll
      for (int t = 0; t < kSeedMaxDim; ++t)
        if (t < dim) code = (code << 1) | ((cell[t] >> b) & 1u);
    codes[i] = code;
    index[i] = std::int32_t(i);
  }
}

// One thread per query, taken in Morton order: the topk-th smallest distance from the query to the
// `window` rows around its place in the references' Morton order (itself excluded in a self-join),
// computed as the scan computes it (the first term a product, then fused multiply-adds in
// dimension order); its bound is the next float above, so the scan's strict test admits it.
__global__ void bound_kernel(const float* __restrict__ queries, const float* __restrict__ references, int m, int n,
                             int dim, int topk, int window, bool self_join, const std::int32_t* __restrict__ query_order,
                             const unsigned long long* __restrict__ query_codes,
                             const unsigned long long* __restrict__ row_codes, const std::int32_t* __restrict__ row_order,
                             float* __restrict__ bound) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= m) return;
  const int q = query_order[s];
  int place = s;  // a self-join's query order is the references' order
  if (!self_join) {  // the first row whose code is not below the query's
    const unsigned long long code = query_codes[s];
    int lo = 0, hi = n;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (row_codes[mid] < code) lo = mid + 1;
      else hi = mid;
    }
    place = lo;
  }
  const int first = max(0, min(place - window / 2, n - window)), last = min(n, first + window);
  float query[kSeedMaxDim];
#pragma unroll
  for (int t = 0; t < kSeedMaxDim; ++t) query[t] = t < dim ? queries[std::size_t(q) * dim + t] : 0.f;
  float best[kMaxList];
#pragma unroll
  for (int e = 0; e < kMaxList; ++e) best[e] = INFINITY;
  for (int r = first; r < last; ++r) {
    const int row = row_order[r];
    if (self_join && row == q) continue;
    const float* x = references + std::size_t(row) * dim;
    float d = 0.f;
#pragma unroll
    for (int t = 0; t < kSeedMaxDim; ++t)
      if (t < dim) {
        const float e = query[t] - x[t];
        d = t == 0 ? __fmul_rn(e, e) : __fmaf_rn(e, e, d);
      }
#pragma unroll
    for (int e = 0; e < kMaxList; ++e) {  // sorted insertion by min/max: the list stays in registers
      const float low = fminf(best[e], d);
      d = fmaxf(best[e], d), best[e] = low;
    }
  }
  float kth = INFINITY;
#pragma unroll
  for (int e = 0; e < kMaxList; ++e) kth = e == topk - 1 ? best[e] : kth;
  bound[q] = nextafterf(kth, INFINITY);
}

int grid_for(long long count) { return int(std::min<long long>(1024, std::max<long long>(1, cuda::divup(count, kThreads)))); }

}  // namespace

ScanSeed::ScanSeed(int m, int n, int dim, bool self_join, cudaStream_t stream)
    : m_(m), n_(n), dim_(dim), self_join_(self_join), range_(2 * std::size_t(dim), stream), codes_(n, stream),
      sorted_codes_(n, stream), query_codes_(self_join ? 0 : m, stream), sorted_query_codes_(self_join ? 0 : m, stream),
      rows_(n, stream), row_order_(n, stream), queries_(self_join ? 0 : m, stream),
      query_order_(self_join ? 0 : m, stream), bound_(m, stream) {
  const int bits = code_bits(dim) * dim;
  std::size_t bytes = 0;
  KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, codes_.data(), sorted_codes_.data(), rows_.data(),
                                               row_order_.data(), n, 0, bits, stream));
  scratch_bytes_ = bytes;
  if (!self_join) {
    KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, query_codes_.data(), sorted_query_codes_.data(),
                                                 queries_.data(), query_order_.data(), m, 0, bits, stream));
    scratch_bytes_ = std::max(scratch_bytes_, bytes);
  }
  scratch_ = cuda::StreamBuffer<unsigned char>(scratch_bytes_, stream);
}

void ScanSeed::enqueue(const float* queries, const float* references, int topk, int window, cudaStream_t stream) {
  const int bits = code_bits(dim_) * dim_;
  KNN_CUDA_TRY(cudaMemsetAsync(range_.data(), 0xff, dim_ * sizeof(unsigned), stream));
  KNN_CUDA_TRY(cudaMemsetAsync(range_.data() + dim_, 0, dim_ * sizeof(unsigned), stream));
  range_kernel<<<grid_for(n_), kThreads, 0, stream>>>(references, n_, dim_, range_.data());
  KNN_CUDA_CHECK_LAUNCH();
  codes_kernel<<<grid_for(n_), kThreads, 0, stream>>>(references, n_, dim_, range_.data(), codes_.data(), rows_.data());
  KNN_CUDA_CHECK_LAUNCH();
  std::size_t bytes = scratch_bytes_;
  KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(scratch_.data(), bytes, codes_.data(), sorted_codes_.data(), rows_.data(),
                                               row_order_.data(), n_, 0, bits, stream));
  if (!self_join_) {
    codes_kernel<<<grid_for(m_), kThreads, 0, stream>>>(queries, m_, dim_, range_.data(), query_codes_.data(),
                                                        queries_.data());
    KNN_CUDA_CHECK_LAUNCH();
    bytes = scratch_bytes_;
    KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(scratch_.data(), bytes, query_codes_.data(), sorted_query_codes_.data(),
                                                 queries_.data(), query_order_.data(), m_, 0, bits, stream));
  }
  bound_kernel<<<cuda::divup(m_, kThreads), kThreads, 0, stream>>>(
      queries, references, m_, n_, dim_, topk, window, self_join_, order(), sorted_query_codes_.data(),
      sorted_codes_.data(), row_order_.data(), bound_.data());
  KNN_CUDA_CHECK_LAUNCH();
}

const std::int32_t* ScanSeed::order() const { return self_join_ ? row_order_.data() : query_order_.data(); }

std::size_t ScanSeed::device_bytes(int m, int n, int dim, bool self_join) {
  const std::size_t per_row = 2 * sizeof(unsigned long long) + 2 * sizeof(std::int32_t);
  // CUB's scratch estimated as one more copy of the larger sort's keys and values.
  return 2 * dim * sizeof(unsigned) + (std::size_t(n) + (self_join ? 0 : std::size_t(m))) * per_row +
         std::size_t(m) * sizeof(float) + std::size_t(std::max(m, n)) * per_row / 2;
}

}  // namespace knn::gpu
