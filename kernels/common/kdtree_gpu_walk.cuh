#pragma once
// The search side of the GPU kd-tree (kdtree_gpu_build.hpp): a query's coordinates, a leaf's scan,
// the pruning tests and the stack-free walk from one leaf to the next over the implicit tree. The box test
// bounds a subtree by the distance from the query to its box; the median test by the distance to
// its parent's splitting plane. Both use v0's float roundings, so neither exceeds a true distance.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/common/kdtree_gpu_build.hpp"
#include "kernels/common/shared_topk.cuh"
#include "kernels/common/tree_gpu.cuh"

namespace knn::kd {

namespace tgpu = knn::tree::gpu;

// The tree as the search kernels read it.
struct TreeView {
  const float* __restrict__ points;
  const std::int32_t* __restrict__ index;
  const float* __restrict__ lo;
  const float* __restrict__ hi;
  const std::int32_t* __restrict__ split_dim;
  const float* __restrict__ split;
  int leaves, leaf_size, dim;
};

// A query's coordinates: in registers when DIM > 0 (compiled in), else read from its row.
template <int DIM>
struct Query {
  float q[DIM > 0 ? DIM : 1];
  const float* row;
  __device__ __forceinline__ void load(const float* r, int dim) {
    row = r;
    if constexpr (DIM > 0) {
#pragma unroll
      for (int k = 0; k < DIM; ++k) q[k] = __ldg(r + k);
    }
  }
  __device__ __forceinline__ float at(int k) const {
    if constexpr (DIM > 0) return q[k];
    return __ldg(row + k);
  }
  __device__ __forceinline__ float coord(int k) const { return __ldg(row + k); }  // a run-time k
};

template <int DIM>
__device__ __forceinline__ float row_distance(const Query<DIM>& q, const float* r, int dim) {
  float d = 0.f;
#pragma unroll
  for (int k = 0; k < (DIM > 0 ? DIM : dim); ++k) d = tgpu::add_square(d, q.at(k), r[k]);
  return d;
}

// The same over a staged row of whole float4s (the kernel rounds its stride up to 4 when DIM > 0):
// one shared-memory load per 4 coordinates; the same sums in the same order.
template <int DIM>
__device__ __forceinline__ float staged_distance(const Query<DIM>& q, const float* r, int dim) {
  if constexpr (DIM > 0) {
    const float4* r4 = reinterpret_cast<const float4*>(r);
    float d = 0.f;
#pragma unroll
    for (int c = 0; c < (DIM + 3) / 4; ++c) {
      const float4 v = r4[c];
      d = tgpu::add_square(d, q.q[4 * c], v.x);
      if (4 * c + 1 < DIM) d = tgpu::add_square(d, q.q[min(4 * c + 1, DIM - 1)], v.y);
      if (4 * c + 2 < DIM) d = tgpu::add_square(d, q.q[min(4 * c + 2, DIM - 1)], v.z);
      if (4 * c + 3 < DIM) d = tgpu::add_square(d, q.q[min(4 * c + 3, DIM - 1)], v.w);
    }
    return d;
  } else {
    return row_distance(q, r, dim);
  }
}

// Rows of a leaf read G at a time as whole float4s, G = 4 / gcd(DIM, 4) (4 rows of 3, 5 or 9
// coordinates, 2 of 2, 1 of 4, 12 or 16): G·DIM/4 16-byte loads instead of G·DIM 4-byte ones. Only
// from a 16-byte aligned leaf (the leaf's first float a multiple of 4); the distances, their order
// and the offers are the scalar loop's. Returns the rows done (a multiple of G; 0 when unaligned).
// (Loading the next group before this group's distances measured slower at k = 5 and 9 on an H100:
// twice the registers.)
template <int DIM>
__device__ __forceinline__ int scan_row_groups(const Query<DIM>& q, const float* rows, const std::int32_t* ids, int S,
                                               bool self_join, int qid, knn::gpu::SharedTopK& list) {
  constexpr int G = DIM % 4 == 0 ? 1 : DIM % 2 == 0 ? 2 : 4, V = G * DIM / 4;
  if ((reinterpret_cast<std::uintptr_t>(rows) & 15) != 0) return 0;
  const float4* g = reinterpret_cast<const float4*>(rows);
  int r = 0;
  for (; r + G <= S; r += G, g += V) {
    float v[4 * V];
#pragma unroll
    for (int c = 0; c < V; ++c) {
      const float4 x = __ldg(g + c);
      v[4 * c] = x.x, v[4 * c + 1] = x.y, v[4 * c + 2] = x.z, v[4 * c + 3] = x.w;
    }
#pragma unroll
    for (int j = 0; j < G; ++j) {
      float d = 0.f;
#pragma unroll
      for (int k = 0; k < DIM; ++k) d = tgpu::add_square(d, q.q[k], v[j * DIM + k]);
      if (!(d <= list.worst_distance())) continue;  // the index is read only for a candidate
      const std::int32_t id = __ldg(ids + r + j);
      if (id >= 0 && !(self_join && id == qid)) list.offer(d, id);
    }
  }
  return r;
}

// True when no point of node `node` (child of a parent whose split is (qv, sp) for this query; `far`:
// the child on the other side of the plane) can come before the K-th pair: its box (box test) or the
// parent's splitting plane (median test) is farther than `worst`. Both bounds use v0's roundings, so
// they never exceed a true distance. The box test of a far child first tries the plane, which is never
// farther than the box: the same decision, often without reading the box.
template <int DIM>
__device__ __forceinline__ bool excluded(const TreeView& t, const Query<DIM>& q, int node, float qv, float sp,
                                         float worst, bool box, bool far = true) {
  if (far) {
    const float gap = __fsub_rn(qv, sp);
    if (!box || __fmul_rn(gap, gap) > worst) return __fmul_rn(gap, gap) > worst;
  }
  const float* lo = t.lo + std::size_t(node) * t.dim;
  const float* hi = t.hi + std::size_t(node) * t.dim;
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < (DIM > 0 ? DIM : t.dim); ++k) sum = tgpu::add_gap_square(sum, q.at(k), __ldg(lo + k), __ldg(hi + k));
  return sum > worst;
}

// The leaf after `leaf` in the query's near-first depth-first order, skipping excluded subtrees, or
// -1. Stack-free: the implicit tree gives the parent, and the query's side of each split tells
// whether a node was its parent's near child (its far sibling is still to visit) or the far one.
template <int DIM>
__device__ int next_leaf(const TreeView& t, const Query<DIM>& q, int leaf, float worst, bool box) {
  const int first_leaf = t.leaves - 1;
  int v = first_leaf + leaf;
  for (;;) {
    int sibling = -1;
    while (v > 0) {  // v is done: climb until an unvisited far sibling survives the test
      const int p = (v - 1) >> 1;
      const float qv = q.coord(__ldg(t.split_dim + p)), sp = __ldg(t.split + p);
      const bool v_left = (v & 1) != 0;
      if (v_left == (qv < sp)) {
        const int s = v_left ? v + 1 : v - 1;
        if (!excluded(t, q, s, qv, sp, worst, box)) {
          sibling = s;
          break;
        }
      }
      v = p;
    }
    if (sibling < 0) return -1;
    v = sibling;
    while (v < first_leaf) {  // descend, near child first
      const float qv = q.coord(__ldg(t.split_dim + v)), sp = __ldg(t.split + v);
      const int near = qv < sp ? 2 * v + 1 : 2 * v + 2, far = qv < sp ? 2 * v + 2 : 2 * v + 1;
      if (!box || !excluded(t, q, near, qv, sp, worst, box, false))
        v = near;
      else if (!excluded(t, q, far, qv, sp, worst, box))
        v = far;
      else
        break;  // both children out: v is done
    }
    if (v >= first_leaf) return v - first_leaf;
  }
}

// Each query's natural leaf: near child all the way down. Keys are (leaf << 32) | query.
__global__ void natural_leaf_kernel(const TreeView t, const float* __restrict__ queries, int m,
                                    std::uint64_t* __restrict__ keys) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float* row = queries + std::size_t(i) * t.dim;
  int v = 0;
  while (v < t.leaves - 1) v = __ldg(row + __ldg(t.split_dim + v)) < __ldg(t.split + v) ? 2 * v + 1 : 2 * v + 2;
  keys[i] = (std::uint64_t(v - (t.leaves - 1)) << 32) | unsigned(i);
}
// A key whose query has a leaf still to visit (finished ones carry leaf = leaves).
struct StillActive {
  unsigned leaves;
  __host__ __device__ bool operator()(std::uint64_t key) const { return unsigned(key >> 32) < leaves; }
};

inline TreeView view_of(const DeviceKdTree& t) {
  return {t.points.data(), t.index.data(), t.lo.data(),    t.hi.data(),
          t.split_dim.data(), t.split.data(), int(t.plan.leaves), int(t.plan.leaf_size), t.dim};
}

}  // namespace knn::kd
