#pragma once
// The search side of the GPU kd-tree (kdtree_gpu_build.hpp): a query's coordinates, a leaf's scan,
// the pruning tests and the stack-free walk from one leaf to the next over the implicit tree. The box test
// bounds a subtree by the distance from the query to its box; the median test by the distance to
// its parent's splitting plane. Both use v0's float roundings, so neither exceeds a true distance.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/exact_distance.cuh"
#include "kernels/device/shared_topk.cuh"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_build.hpp"

namespace knn::kd {

namespace exact = knn::gpu::exact;

// The tree as the search kernels read it.
struct TreeView {
  const float* __restrict__ points;
  const std::int32_t* __restrict__ index;
  const float* __restrict__ box;  // node v's box: lo at box + 2 v box_pad, hi box_pad floats on
  const std::int32_t* __restrict__ split_dim;
  const float* __restrict__ split;
  int leaves, leaf_size, dim, box_pad;  // box_pad: dim rounded up to whole float4s
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
  // Coordinate k known only at run time: picked from the registers for small DIM (selects, no load).
  __device__ __forceinline__ float coord(int k) const {
    if constexpr (DIM > 0 && DIM <= 8) {
      float v = q[0];
#pragma unroll
      for (int j = 1; j < DIM; ++j) v = k == j ? q[j] : v;
      return v;
    }
    return __ldg(row + k);
  }
};

// A row's squared distance, v0's sums in v0's order. It starts from the first square alone: v0 adds
// that to 0, which leaves a square (never -0) unchanged, so the sums are equal bit for bit.
__device__ __forceinline__ float first_square(float a, float b) {
  const float e = __fsub_rn(a, b);
  return __fmul_rn(e, e);
}

template <int DIM>
__device__ __forceinline__ float row_distance(const Query<DIM>& q, const float* r, int dim) {
  float d = first_square(q.at(0), r[0]);
#pragma unroll
  for (int k = 1; k < (DIM > 0 ? DIM : dim); ++k) d = exact::add_square(d, q.at(k), r[k]);
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
      d = exact::add_square(d, q.q[4 * c], v.x);
      if (4 * c + 1 < DIM) d = exact::add_square(d, q.q[min(4 * c + 1, DIM - 1)], v.y);
      if (4 * c + 2 < DIM) d = exact::add_square(d, q.q[min(4 * c + 2, DIM - 1)], v.z);
      if (4 * c + 3 < DIM) d = exact::add_square(d, q.q[min(4 * c + 3, DIM - 1)], v.w);
    }
    return d;
  } else {
    return row_distance(q, r, dim);
  }
}

// Leaf rows of a compiled-in k read as whole float4s: G rows in V float4s, G = 4 / gcd(DIM, 4).
template <int DIM>
struct GroupRows {
  static constexpr int G = DIM % 4 == 0 ? 1 : DIM % 2 == 0 ? 2 : 4, V = G * DIM / 4;
};

// The G distances of float4 group x (row_distance's sums), each to row(j, distance) as it is done;
// read only when `valid` (else from zeros).
template <int DIM, typename Row>
__device__ __forceinline__ void group_rows(const Query<DIM>& q, const float4* g, int x, bool valid, Row&& row) {
  constexpr int G = GroupRows<DIM>::G, V = GroupRows<DIM>::V;
  float v[4 * V];
#pragma unroll
  for (int c = 0; c < V; ++c) {
    const float4 f = valid ? __ldg(g + std::size_t(x) * V + c) : make_float4(0.f, 0.f, 0.f, 0.f);
    v[4 * c] = f.x, v[4 * c + 1] = f.y, v[4 * c + 2] = f.z, v[4 * c + 3] = f.w;
  }
#pragma unroll
  for (int j = 0; j < G; ++j) {
    float d = first_square(q.q[0], v[j * DIM]);
#pragma unroll
    for (int k = 1; k < DIM; ++k) d = exact::add_square(d, q.q[k], v[j * DIM + k]);
    row(j, d);
  }
}

// Lane `lane` of L hands its share of leaf `leaf` to offer(distance, tree row), in the row order of
// the leaf within the share. With `vec` and k compiled in, from a 16-byte aligned leaf, rows go G at a
// time as whole float4s, G = 4 / gcd(DIM, 4) (4 rows of 3, 5, 7 or 9 coordinates, 2 of 2, 1 of 4,
// 8, 12 or 16): G·DIM/4 16-byte loads instead of G·DIM 4-byte ones; lane takes groups lane, lane + L, ....
// The rest go one row at a time. The distances are row_distance's either way. (Loading the next group
// before this group's distances measured slower at k = 5 and 9 on an H100: twice the registers.)
// HOLD (L = 1 only): flush() is called after every `batch` rows and at the end (batch >= 4, so a float4
// group never straddles two flushes and at most `batch` rows are offered between flushes).
struct NoFlush {
  __device__ void operator()() const {}
};
template <int DIM, int L, bool HOLD = false, typename Offer, typename Flush = NoFlush>
__device__ __forceinline__ void scan_share(const TreeView& t, const Query<DIM>& q, int leaf, int lane, bool vec, Offer&& offer,
                                           int batch = 0, Flush&& flush = Flush{}) {
  static_assert(!HOLD || L == 1, "rows held back at one lane a key only");
  const int S = t.leaf_size, dim = DIM > 0 ? DIM : t.dim, first = leaf * S;
  const float* rows = t.points + std::size_t(first) * dim;
  int r = 0;
  if constexpr (DIM > 0) {
    constexpr int G = GroupRows<DIM>::G;
    if (vec && (reinterpret_cast<std::uintptr_t>(rows) & 15) == 0) {
      const float4* g = reinterpret_cast<const float4*>(rows);
      const int groups = S / G;
      const auto offer_group = [&](int x) { group_rows(q, g, x, true, [&](int j, float d) { offer(d, first + x * G + j); }); };
      if constexpr (HOLD) {
        for (int x0 = 0, per = batch / G; x0 < groups; x0 += per) {
          for (int x = x0; x < min(groups, x0 + per); ++x) offer_group(x);
          flush();
        }
      } else {
        for (int x = lane; x < groups; x += L) offer_group(x);
      }
      r = groups * G;
    }
  }
  const auto offer_row = [&](int x) { offer(row_distance(q, rows + std::size_t(x) * dim, dim), first + x); };
  if constexpr (HOLD) {
    for (; r < S; r += batch) {
      for (int x = r; x < min(S, r + batch); ++x) offer_row(x);
      flush();
    }
  } else {
    for (r += lane; r < S; r += L) offer_row(r);
  }
}

// The L lanes of `mask` (one warp) score leaf `leaf` together: lane takes every L-th float4 group (as
// scan_share), or every L-th row, and each distance at most bound() goes to all L lanes, which hand it
// to take(distance, tree row) one after another, lowest lane first. The lanes run the same rounds, so
// lanes that keep identical lists stay identical.
template <int DIM, int L, typename Bound, typename Take>
__device__ __forceinline__ void scan_lanes(const TreeView& t, const Query<DIM>& q, int leaf, int lane, bool vec, unsigned mask,
                                           Bound&& bound, Take&& take) {
  const int S = t.leaf_size, dim = DIM > 0 ? DIM : t.dim, first = leaf * S;
  const float* rows = t.points + std::size_t(first) * dim;
  const auto share = [&](bool valid, float d, int r) {
    unsigned want = __ballot_sync(mask, valid && d <= bound());
    while (want) {
      const int src = __ffs(want) - 1;
      want &= want - 1;
      take(__shfl_sync(mask, d, src), __shfl_sync(mask, r, src));
    }
  };
  int r = 0;
  if constexpr (DIM > 0) {
    constexpr int G = GroupRows<DIM>::G;
    if (vec && (reinterpret_cast<std::uintptr_t>(rows) & 15) == 0) {
      const float4* g = reinterpret_cast<const float4*>(rows);
      const int groups = S / G;
      for (int x0 = 0; x0 < groups; x0 += L) {
        const int x = x0 + lane;
        const bool valid = x < groups;
        group_rows(q, g, x, valid, [&](int j, float d) { share(valid, d, first + x * G + j); });
      }
      r = groups * G;
    }
  }
  for (int r0 = r; r0 < S; r0 += L) {
    const int x = r0 + lane;
    const bool valid = x < S;
    share(valid, valid ? row_distance(q, rows + std::size_t(x) * dim, dim) : INFINITY, first + x);
  }
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
  const float* lo = t.box + std::size_t(node) * 2 * t.box_pad;
  const float* hi = lo + t.box_pad;
  float sum = 0.f;
  if constexpr (DIM > 0) {  // whole float4s (the padding lanes are never used)
#pragma unroll
    for (int c = 0; c < (DIM + 3) / 4; ++c) {
      const float4 l = __ldg(reinterpret_cast<const float4*>(lo) + c), h = __ldg(reinterpret_cast<const float4*>(hi) + c);
      const float ls[4] = {l.x, l.y, l.z, l.w}, hs[4] = {h.x, h.y, h.z, h.w};
#pragma unroll
      for (int k = 4 * c; k < DIM && k < 4 * c + 4; ++k) sum = exact::add_gap_square(sum, q.q[k], ls[k - 4 * c], hs[k - 4 * c]);
    }
  } else {
    for (int k = 0; k < t.dim; ++k) sum = exact::add_gap_square(sum, q.at(k), __ldg(lo + k), __ldg(hi + k));
  }
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
  return {t.points.data(), t.index.data(), t.box.data(), t.split_dim.data(), t.split.data(), int(t.plan.leaves),
          int(t.plan.leaf_size), t.dim, box_pad(t.dim)};
}

}  // namespace knn::kd
