// PartialMerge: pack, segmented sort (CUB), keep the first topk of each query.
#include "kernels/common/topk_merge.hpp"

#include <cub/device/device_segmented_sort.cuh>

#include "core/cuda/device.hpp"
#include "core/cuda/error.hpp"

namespace knn::gpu {
namespace {

constexpr int kThreads = 256;

// One thread per partial entry: its (distance, index) as one key (see scan::pack).
__global__ void pack_kernel(const float* __restrict__ distances, const std::int32_t* __restrict__ indices,
                            long long count, unsigned long long* __restrict__ keys) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count; e += (long long)gridDim.x * blockDim.x)
    keys[e] = (static_cast<unsigned long long>(__float_as_uint(distances[e])) << 32) |
              static_cast<std::uint32_t>(indices[e]);
}

__global__ void offsets_kernel(long long* __restrict__ offsets, int m, long long per_query) {
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q <= m; q += gridDim.x * blockDim.x) offsets[q] = q * per_query;
}

// One thread per answer slot: entry s of query q's sorted keys. v0 answers a query with no
// candidate at all (self-join, n = 1) with index 0 when topk = 1, and -1 in every empty slot
// otherwise; so does this.
__global__ void unpack_kernel(const unsigned long long* __restrict__ keys, int m, long long per_query, int topk,
                              std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  const long long slots = (long long)m * topk;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < slots; e += (long long)gridDim.x * blockDim.x) {
    const long long q = e / topk, s = e % topk;
    const unsigned long long key = keys[q * per_query + s];
    const std::int32_t index = static_cast<std::int32_t>(static_cast<std::uint32_t>(key & 0xffffffffu));
    indices[e] = topk == 1 && index < 0 ? 0 : index;
    distances[e] = __uint_as_float(static_cast<unsigned>(key >> 32));
  }
}

__global__ void fill_kernel(unsigned long long* keys, long long count) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count; e += (long long)gridDim.x * blockDim.x)
    keys[e] = (static_cast<unsigned long long>(__float_as_uint(INFINITY)) << 32) | 0xffffffffu;
}

int grid_for(long long count) { return int(std::min<long long>(4096, std::max<long long>(1, cuda::divup(count, kThreads)))); }

}  // namespace

PartialMerge::PartialMerge(int m, long long per_query, int topk, cudaStream_t stream, bool packs)
    : m_(m), topk_(topk), per_query_(per_query), stream_(stream),
      keys_(packs ? std::size_t(m) * per_query : 0, stream), sorted_(std::size_t(m) * per_query, stream),
      offsets_(std::size_t(m) + 1, stream) {
  KNN_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(nullptr, scratch_bytes_, keys_.data(), sorted_.data(),
                                                  (long long)m * per_query, m, offsets_.data(), offsets_.data() + 1,
                                                  stream_));
  scratch_ = cuda::StreamBuffer<unsigned char>(scratch_bytes_, stream_);
}

void PartialMerge::enqueue(const float* partial_distances, const std::int32_t* partial_indices, std::int32_t* indices,
                           float* distances) {
  const long long count = (long long)m_ * per_query_;
  pack_kernel<<<grid_for(count), kThreads, 0, stream_>>>(partial_distances, partial_indices, count, keys_.data());
  KNN_CUDA_CHECK_LAUNCH();
  enqueue_keys(keys_.data(), indices, distances);
}

void PartialMerge::enqueue_keys(const unsigned long long* keys, std::int32_t* indices, float* distances) {
  const long long count = (long long)m_ * per_query_;
  offsets_kernel<<<grid_for(m_ + 1), kThreads, 0, stream_>>>(offsets_.data(), m_, per_query_);
  KNN_CUDA_CHECK_LAUNCH();
  KNN_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(scratch_.data(), scratch_bytes_, keys, sorted_.data(), count,
                                                  m_, offsets_.data(), offsets_.data() + 1, stream_));
  unpack_kernel<<<grid_for((long long)m_ * topk_), kThreads, 0, stream_>>>(sorted_.data(), m_, per_query_, topk_,
                                                                          indices, distances);
  KNN_CUDA_CHECK_LAUNCH();
}

std::size_t PartialMerge::device_bytes(int m, long long per_query) {
  return std::size_t(m) * per_query * 3 * sizeof(unsigned long long) + (std::size_t(m) + 1) * sizeof(long long);
}

void fill_worst_keys(unsigned long long* keys, long long count, cudaStream_t stream) {
  fill_kernel<<<grid_for(count), kThreads, 0, stream>>>(keys, count);
  KNN_CUDA_CHECK_LAUNCH();
}

void unpack_best(const unsigned long long* keys, int m, std::int32_t* indices, float* distances, cudaStream_t stream) {
  unpack_kernel<<<grid_for(m), kThreads, 0, stream>>>(keys, m, 1, 1, indices, distances);
  KNN_CUDA_CHECK_LAUNCH();
}

}  // namespace knn::gpu
