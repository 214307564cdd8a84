#pragma once
// One thread's running top-k list kept in shared memory, slot-major: slot s of thread t sits at
// base[s * stride + t], so the 32 lanes of a warp touching the same slot hit 32 different banks.
// The list stays sorted by (distance, index) and its worst distance is cached in a register, so
// a candidate that does not enter costs one compare and no shared-memory access.
#include <cuda_runtime.h>

#include <cstdint>

namespace knn::gpu {

class SharedTopK {
 public:
  // `dist` and `idx` point at this thread's slot 0; `stride` is the number of threads sharing
  // the arrays (the block size).
  __device__ __forceinline__ SharedTopK(float* dist, std::int32_t* idx, int stride, int topk)
      : dist_(dist), idx_(idx), stride_(stride), topk_(topk) {}

  // Every slot empty: (+inf, -1), what v0 leaves when fewer than topk candidates exist.
  __device__ __forceinline__ void clear() {
    for (int s = 0; s < topk_; ++s) {
      dist_[s * stride_] = INFINITY;
      idx_[s * stride_] = -1;
    }
    worst_ = INFINITY;
  }

  // A list that accepts nothing (the thread has no query of its own but must keep its warp whole).
  __device__ __forceinline__ void close() { worst_ = -INFINITY; }

  __device__ __forceinline__ float worst_distance() const { return worst_; }

  // Offers (d, i). Precondition: candidates arrive in increasing index order, so i is larger
  // than every kept index and knn::before(d, i, kept) reduces to d < kept distance: a tie with
  // a kept pair keeps the older (smaller) index in front, as v0 does. Empty slots (+inf, -1)
  // take any finite d; +inf and NaN never enter.
  __device__ __forceinline__ void offer_ascending(float d, std::int32_t i) {
    if (!(d < worst_)) return;
    int pos = topk_ - 1;
    float new_worst = d;
    while (pos > 0) {
      const float prev = dist_[(pos - 1) * stride_];
      if (!(d < prev)) break;
      if (pos == topk_ - 1) new_worst = prev;  // the old second-worst becomes the worst
      dist_[pos * stride_] = prev;
      idx_[pos * stride_] = idx_[(pos - 1) * stride_];
      --pos;
    }
    dist_[pos * stride_] = d;
    idx_[pos * stride_] = i;
    worst_ = new_worst;
  }

  // Writes the sorted list to one output row of topk pairs.
  __device__ __forceinline__ void store(std::int32_t* __restrict__ out_idx, float* __restrict__ out_dist) const {
    for (int s = 0; s < topk_; ++s) {
      out_idx[s] = idx_[s * stride_];
      out_dist[s] = dist_[s * stride_];
    }
  }

 private:
  float* dist_;
  std::int32_t* idx_;
  int stride_;
  int topk_;
  float worst_ = INFINITY;
};

}  // namespace knn::gpu
