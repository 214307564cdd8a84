#pragma once
// What both GPU kd-tree builds use (kdtree_gpu_build.cu, kdtree_gpu_build_lists.cu): the block size,
// a grid for a grid-stride loop, floats as unsigned integers in the same order, and the tree's arrays.
#include <algorithm>
#include <cstdint>

#include "kernels/trees/gpu_kdtree/kdtree_gpu_build.hpp"

namespace knn::kd::detail {

constexpr int kThreads = 256;

inline unsigned grid_for(std::int64_t items) {
  return unsigned(std::min<std::int64_t>((items + kThreads - 1) / kThreads, 1 << 20));
}

// Floats as unsigned integers in the same order (+inf after every finite value, NaN with its sign
// bit clear after +inf), for atomicMin/Max and radix keys; unordered() undoes it bit for bit.
__device__ __forceinline__ unsigned ordered(float f) {
  const unsigned u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float unordered(unsigned u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

// The tree's arrays for the plan, allocated on the stream, their contents not yet written.
inline DeviceKdTree allocate_tree(const LeafPlan& plan, int dim, cudaStream_t stream) {
  const std::size_t padded = std::size_t(plan.padded()), nodes = std::size_t(plan.nodes());
  DeviceKdTree t;
  t.plan = plan;
  t.dim = dim;
  t.points = cuda::StreamBuffer<float>(padded * dim, stream);
  t.index = cuda::StreamBuffer<std::int32_t>(padded, stream);
  t.lo = cuda::StreamBuffer<float>(nodes * dim, stream);
  t.hi = cuda::StreamBuffer<float>(nodes * dim, stream);
  t.split_dim = cuda::StreamBuffer<std::int32_t>(std::size_t(plan.leaves), stream);
  t.split = cuda::StreamBuffer<float>(std::size_t(plan.leaves), stream);
  t.box = cuda::StreamBuffer<float>(nodes * 2 * box_pad(dim), stream);
  return t;
}

}  // namespace knn::kd::detail
