#pragma once
// Device helpers shared by the GPU tree versions (v11, v13): the per-thread top-k list held in
// registers and the leaf scan that feeds it (their distances, rounded exactly like the host's,
// come from kernels/device/exact_distance.cuh). The row order is the core's knn::before.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/order.hpp"

namespace knn::tree::gpu {

// The best `topk` (distance, index) pairs of one query, for topk <= CAP, sorted ascending in
// registers (every index below is a compile-time constant once the loops unroll). The first
// CAP - topk slots hold (-inf, -1) sentinels that nothing displaces, so the worst kept pair is
// always slot CAP - 1; real slots start as (+inf, -1), as v0 leaves unfilled slots.
template <int CAP>
struct TopKList {
  float dist[CAP];
  std::int32_t idx[CAP];

  __device__ __forceinline__ void init(int topk) {
#pragma unroll
    for (int j = 0; j < CAP; ++j) {
      dist[j] = j < CAP - topk ? -INFINITY : INFINITY;
      idx[j] = -1;
    }
  }
  __device__ __forceinline__ float worst_distance() const { return dist[CAP - 1]; }
  __device__ __forceinline__ std::int32_t worst_index() const { return idx[CAP - 1]; }

  // Inserts (d, i) if it comes before the worst pair; the worst one drops out.
  __device__ __forceinline__ void offer(float d, std::int32_t i) {
    if (!before(d, i, dist[CAP - 1], idx[CAP - 1])) return;
#pragma unroll
    for (int j = CAP - 1; j > 0; --j) {
      // Slot j takes its left neighbour if the new pair comes before it, the new pair if the new
      // pair lands exactly here, else keeps its own (slots are rewritten from the right, so
      // dist[j - 1] is still the old value).
      const bool shift = before(d, i, dist[j - 1], idx[j - 1]);
      const bool here = !shift && before(d, i, dist[j], idx[j]);
      const float nd = shift ? dist[j - 1] : (here ? d : dist[j]);
      const std::int32_t ni = shift ? idx[j - 1] : (here ? i : idx[j]);
      dist[j] = nd;
      idx[j] = ni;
    }
    if (before(d, i, dist[0], idx[0])) {
      dist[0] = d;
      idx[0] = i;
    }
  }

  // Writes the topk real pairs (the last topk slots) to one output row.
  __device__ __forceinline__ void store(int topk, std::int32_t* out_idx, float* out_dist) const {
#pragma unroll
    for (int j = 0; j < CAP; ++j) {
      const int o = j - (CAP - topk);
      if (o >= 0) {
        out_idx[o] = idx[j];
        out_dist[o] = dist[j];
      }
    }
  }
};

// Offers the rows [begin, end) of a leaf to `top`; distance(r) is row r's squared distance to the
// query and index[r] its reference index. WARP = false: one thread scans the rows in order. WARP =
// true: the 32 lanes share the scan, one row per lane, and the rows that beat the worst pair are
// then offered to every lane's list in lane order, so all lanes keep the same list.
template <bool WARP, int CAP, class Distance>
__device__ __forceinline__ void scan_leaf(TopKList<CAP>& top, int lane, int begin, int end,
                                          const std::int32_t* __restrict__ index, const Distance& distance) {
  if constexpr (WARP) {
    for (int base = begin; base < end; base += 32) {
      const int r = base + lane;
      float d = INFINITY;
      std::int32_t i = -1;
      if (r < end) {
        d = distance(r);
        if (d <= top.worst_distance()) i = __ldg(index + r);
      }
      unsigned mask = __ballot_sync(0xffffffffu, i >= 0 && before(d, i, top.worst_distance(), top.worst_index()));
      while (mask) {
        const int src = __ffs(mask) - 1;
        mask &= mask - 1;
        top.offer(__shfl_sync(0xffffffffu, d, src), __shfl_sync(0xffffffffu, i, src));
      }
    }
  } else {
    for (int r = begin; r < end; ++r) {
      const float d = distance(r);
      if (d <= top.worst_distance()) top.offer(d, __ldg(index + r));
    }
  }
}

}  // namespace knn::tree::gpu
