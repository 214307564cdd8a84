// v16.key_sort=count: a wave's (leaf << 32 | query) keys ordered by leaf in one counting pass instead
// of a radix sort of the leaf bits. A histogram of the leaves (the finished keys, leaf = leaves, in the
// last bin), CUB's exclusive scan of it, then each key placed at its leaf's next free slot. Keys of
// one warp with the same leaf take one atomic (__match_any_sync) and keep their lanes' order; keys of
// one leaf from different warps land in no fixed order. A wave's answers do not depend on that order:
// every key of a leaf scans the same rows into its own heap. Declared in kdtree_gpu_keysort.hpp.
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <cstddef>
#include <cstdint>

#include "core/cuda/runtime.hpp"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_keysort.hpp"

namespace knn::kd {
namespace {

constexpr int kKeySortBlock = 256;

// The warp's lanes whose key has this leaf (the calling lanes, `active`, only).
__device__ __forceinline__ unsigned same_leaf(unsigned active, unsigned leaf) { return __match_any_sync(active, leaf); }

__global__ void __launch_bounds__(kKeySortBlock) leaf_histogram_kernel(const std::uint64_t* __restrict__ keys, int count, unsigned* bins) {
  const int i = blockIdx.x * kKeySortBlock + threadIdx.x;
  const unsigned active = __ballot_sync(0xffffffffu, i < count);
  if (i >= count) return;
  const unsigned leaf = unsigned(keys[i] >> 32);
  const unsigned peers = same_leaf(active, leaf);
  if ((threadIdx.x & 31) == unsigned(__ffs(peers) - 1)) atomicAdd(bins + leaf, unsigned(__popc(peers)));
}

__global__ void __launch_bounds__(kKeySortBlock) leaf_scatter_kernel(const std::uint64_t* __restrict__ keys, int count, unsigned* next,
                                                                    std::uint64_t* __restrict__ out) {
  const int i = blockIdx.x * kKeySortBlock + threadIdx.x;
  const unsigned active = __ballot_sync(0xffffffffu, i < count);
  if (i >= count) return;
  const std::uint64_t key = keys[i];
  const unsigned leaf = unsigned(key >> 32), lane = threadIdx.x & 31;
  const unsigned peers = same_leaf(active, leaf);
  const int leader = __ffs(peers) - 1;
  unsigned base = 0;
  if (int(lane) == leader) base = atomicAdd(next + leaf, unsigned(__popc(peers)));
  base = __shfl_sync(peers, base, leader);
  out[base + __popc(peers & ((1u << lane) - 1))] = key;
}

}  // namespace

std::size_t count_sort_temp_bytes(int bins) {
  std::size_t bytes = 0;
  KNN_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const unsigned*>(nullptr), static_cast<unsigned*>(nullptr), bins));
  return bytes;
}

void count_sort_keys(const std::uint64_t* in, std::uint64_t* out, int count, int bins, unsigned* counts, unsigned* next, void* temp,
                            std::size_t temp_bytes, cudaStream_t stream) {
  if (count <= 0) return;
  const unsigned grid = unsigned((count + kKeySortBlock - 1) / kKeySortBlock);
  KNN_CUDA_TRY(cudaMemsetAsync(counts, 0, std::size_t(bins) * sizeof(unsigned), stream));
  leaf_histogram_kernel<<<grid, kKeySortBlock, 0, stream>>>(in, count, counts);
  KNN_CUDA_CHECK_LAUNCH();
  KNN_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, next, bins, stream));
  leaf_scatter_kernel<<<grid, kKeySortBlock, 0, stream>>>(in, count, next, out);
  KNN_CUDA_CHECK_LAUNCH();
}

}  // namespace knn::kd
