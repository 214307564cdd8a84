#pragma once
// Host-side pieces shared by the tree versions (v10-v13): the (distance, index) order that every
// result row is sorted in, a bounded top-k that works in place on an output row, and the pruning
// test. Plain C++ (no CUDA headers): the CPU versions must build without CUDA.
//
// Trees visit references out of index order, so the tie rule of v0 ("among equal distances the
// smaller index wins") has to be enforced by comparing (distance, index) pairs, never distances
// alone: a candidate enters when it comes before the current worst pair.
#include <cstdint>
#include <limits>
#include <utility>

namespace knn::tree {

// (d1, i1) comes before (d2, i2) in a result row.
inline bool before(float d1, std::int32_t i1, float d2, std::int32_t i2) {
  return d1 < d2 || (d1 == d2 && i1 < i2);
}

// Lower bounds (squared distance from a query to a box) are summed in float, like the distances,
// but not necessarily with the same roundings (a compiler may contract one sum into FMAs and not
// the other). Shrinking a bound by a few ulps per term keeps it at or below the float distance of
// every point inside the box, so a pruned box can never hold a better (or tied, smaller-index)
// candidate. The relative error of either sum is below (dim + 2) * 2^-24.
inline float lower_bound_margin(int dim) { return 1.0f - float(2 * dim + 8) * 0x1p-24f; }

// A cell whose points are all at squared distance >= `bound` from the query, and whose smallest
// reference index is `min_index`, can hold no candidate that comes before (worst_d, worst_i).
// Pruning at bound == worst_d is only allowed when every index in the cell is larger than the
// worst index, or a tied point with a smaller index would be lost.
inline bool can_prune(float bound, std::int32_t min_index, float worst_d, std::int32_t worst_i) {
  return bound > worst_d || (bound == worst_d && min_index > worst_i);
}

// The best `topk` (distance, index) pairs seen so far, kept in place in one output row.
// Empty slots hold (+inf, -1), which is what v0 leaves when topk > n; a candidate at +inf never
// enters, again as in v0. Small rows stay sorted (insertion); large rows are a max-heap that
// finish() sorts, so topk = n stays O(log topk) per insertion.
class RowTopK {
 public:
  static constexpr int kSortedLimit = 32;

  RowTopK(std::int32_t* indices, float* distances, int topk)
      : idx_(indices), dist_(distances), topk_(topk), heap_(topk > kSortedLimit) {
    for (int i = 0; i < topk_; ++i) {
      idx_[i] = -1;
      dist_[i] = std::numeric_limits<float>::infinity();
    }
    worst_slot_ = heap_ ? 0 : topk_ - 1;
  }

  float worst_distance() const { return dist_[worst_slot_]; }
  std::int32_t worst_index() const { return idx_[worst_slot_]; }

  // Offers one candidate; returns whether it entered.
  bool offer(float d, std::int32_t index) {
    if (!before(d, index, dist_[worst_slot_], idx_[worst_slot_])) return false;
    if (heap_)
      replace_top(d, index);
    else
      insert_sorted(d, index);
    return true;
  }

  // Leaves the row sorted by (distance, index).
  void finish() {
    if (!heap_) return;
    for (int end = topk_ - 1; end > 0; --end) {
      std::swap(dist_[0], dist_[end]);
      std::swap(idx_[0], idx_[end]);
      sift_down(0, end);
    }
  }

 private:
  void insert_sorted(float d, std::int32_t index) {
    int pos = topk_ - 1;
    while (pos > 0 && before(d, index, dist_[pos - 1], idx_[pos - 1])) {
      dist_[pos] = dist_[pos - 1];
      idx_[pos] = idx_[pos - 1];
      --pos;
    }
    dist_[pos] = d;
    idx_[pos] = index;
  }

  // Max-heap on the pair order: the root is the worst kept pair.
  void replace_top(float d, std::int32_t index) {
    dist_[0] = d;
    idx_[0] = index;
    sift_down(0, topk_);
  }

  void sift_down(int pos, int size) {
    const float d = dist_[pos];
    const std::int32_t index = idx_[pos];
    for (;;) {
      int child = 2 * pos + 1;
      if (child >= size) break;
      if (child + 1 < size && before(dist_[child], idx_[child], dist_[child + 1], idx_[child + 1])) ++child;
      if (!before(d, index, dist_[child], idx_[child])) break;
      dist_[pos] = dist_[child];
      idx_[pos] = idx_[child];
      pos = child;
    }
    dist_[pos] = d;
    idx_[pos] = index;
  }

  std::int32_t* idx_;
  float* dist_;
  int topk_;
  bool heap_;
  int worst_slot_;
};

// Squared distance from `query` to the box [lo, hi], summed in dimension order like
// squared_distance(). Each per-dimension gap is no larger than the gap to any point inside.
inline float box_distance(const float* query, const float* lo, const float* hi, int dim) {
  float sum = 0.f;
  for (int t = 0; t < dim; ++t) {
    float gap = 0.f;
    if (query[t] < lo[t])
      gap = lo[t] - query[t];
    else if (query[t] > hi[t])
      gap = query[t] - hi[t];
    sum += gap * gap;
  }
  return sum;
}

}  // namespace knn::tree
