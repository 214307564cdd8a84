#pragma once
// One thread's running top-k list kept in shared memory, slot-major: slot s of thread t sits at
// base[s * stride + t], so the 32 lanes of a warp touching the same slot hit 32 different banks.
// The list is a max-heap on the (distance, index) order (knn::before): the worst kept pair is the
// root, and its distance is cached in a register, so a candidate that does not enter costs one
// compare and no shared-memory access, and one that enters costs a sift-down of at most
// log2(topk) levels (5 at topk = 32) instead of shifting on average topk / 2 slots of a sorted
// list. store() sorts the heap out into ascending (distance, index) order.
// The same code compiles for the host (plain arrays), so the CPU tests check it against v0's order.
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#define KNN_TOPK_FN __host__ __device__ __forceinline__
#else
#define KNN_TOPK_FN inline
#endif

#include <cmath>
#include <cstdint>

namespace knn::gpu {

class SharedTopK {
 public:
  SharedTopK() = default;  // unusable until assigned
  // `dist` and `idx` point at this thread's slot 0; `stride` is the number of threads sharing
  // the arrays (the block size).
  KNN_TOPK_FN SharedTopK(float* dist, std::int32_t* idx, int stride, int topk)
      : dist_(dist), idx_(idx), stride_(stride), topk_(topk) {}

  // Every slot empty: (+inf, -1), what v0 leaves when fewer than topk candidates exist.
  KNN_TOPK_FN void clear() {
    for (int s = 0; s < topk_; ++s) set(s, INFINITY, -1);
    worst_ = INFINITY;
  }

  // A list that accepts nothing (the thread has no query of its own but must keep its warp whole).
  KNN_TOPK_FN void close() { worst_ = -INFINITY; }

  KNN_TOPK_FN float worst_distance() const { return worst_; }

  // Takes up a heap whose slots were written by an earlier owner (kept between kernel launches).
  KNN_TOPK_FN void resume() { worst_ = dist_[0]; }

  // Offers (d, i). Precondition: candidates arrive in increasing index order, so i is larger
  // than every kept index and knn::before(d, i, worst kept) reduces to d < worst distance: a tie
  // with a kept pair keeps the older (smaller) index, as v0 does. Empty slots (+inf, -1) take any
  // finite d; +inf and NaN never enter.
  KNN_TOPK_FN void offer_ascending(float d, std::int32_t i) {
    if (!(d < worst_)) return;
    sift_down(d, i, topk_);  // the new pair replaces the root
    worst_ = dist_[0];
  }

  // Offers (d, i) with indices in any order (tree searches): the full (distance, index) rule
  // against the worst kept pair, whose index is read only on an exact distance tie. +inf and NaN
  // never enter.
  KNN_TOPK_FN void offer(float d, std::int32_t i) {
    if (!(d <= worst_)) return;
    if (d == worst_ && !(i < idx_[0])) return;
    sift_down(d, i, topk_);
    worst_ = dist_[0];
  }

  // Writes the list in ascending (distance, index) order to one output row of topk pairs; the
  // heap is used up (pop the root into the last free output slot, refill the root, sift down).
  KNN_TOPK_FN void store(std::int32_t* __restrict__ out_idx, float* __restrict__ out_dist) {
    for (int s = topk_ - 1; s >= 0; --s) {
      out_idx[s] = idx_[0];
      out_dist[s] = dist_[0];
      if (s > 0) sift_down(dist_[s * stride_], idx_[s * stride_], s);
    }
  }

 private:
  // (da, ia) after (db, ib) in the (distance, index) order. Kept pairs and the empty (+inf, -1)
  // are never NaN; empties equal each other.
  static KNN_TOPK_FN bool after(float da, std::int32_t ia, float db, std::int32_t ib) {
    return da > db || (da == db && ia > ib);
  }

  KNN_TOPK_FN void set(int slot, float d, std::int32_t i) {
    dist_[slot * stride_] = d;
    idx_[slot * stride_] = i;
  }

  // Puts (d, i) at the root of the heap of `size` slots and moves it down past every child that
  // comes after it: each level loads both children (independent loads) and moves one pair up.
  KNN_TOPK_FN void sift_down(float d, std::int32_t i, int size) {
    int pos = 0;
    for (;;) {
      int child = 2 * pos + 1;
      if (child >= size) break;
      float cd = dist_[child * stride_];
      std::int32_t ci = idx_[child * stride_];
      if (child + 1 < size) {
        const float rd = dist_[(child + 1) * stride_];
        const std::int32_t ri = idx_[(child + 1) * stride_];
        if (after(rd, ri, cd, ci)) ++child, cd = rd, ci = ri;
      }
      if (!after(cd, ci, d, i)) break;
      set(pos, cd, ci);
      pos = child;
    }
    set(pos, d, i);
  }

  float* dist_ = nullptr;
  std::int32_t* idx_ = nullptr;
  int stride_ = 0;
  int topk_ = 0;
  float worst_ = INFINITY;
};

}  // namespace knn::gpu

#undef KNN_TOPK_FN
