#pragma once
// The CPU reference arithmetic and the one top-k row used by v0, the validation reference and the
// CPU trees: squared distances in the seeds' float arithmetic, and a bounded list of the best
// (distance, index) pairs kept in place in one output row.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/order.hpp"
#include "core/problem.hpp"

namespace knn {

// Squared Euclidean distance accumulated in float, in dimension order: the seeds' arithmetic.
inline float squared_distance(const float* a, const float* b, int dim) {
  float sum = 0.f;
  for (int t = 0; t < dim; ++t) {
    const float diff = a[t] - b[t];
    sum += diff * diff;
  }
  return sum;
}

// The best `topk` (distance, index) pairs seen so far, kept in place in one output row, in the
// order of before(). Candidates may arrive in any index order (trees visit references out of
// order): a candidate enters when it comes before the current worst pair, so among equal
// distances the smaller index is kept, as in v0.
// Empty slots hold (+inf, -1), which is what v0 leaves when topk > n; a candidate at +inf (or NaN)
// never enters. Small rows stay sorted (insertion); large rows are a max-heap that finish() sorts,
// so topk = n stays O(log topk) per insertion. Call finish() once the last candidate is offered.
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

// Answers query q by exhaustive search into one row (topk slots at idx / dist); the body of v0
// and of the validation reference. In a self-join reference q (the query itself) is passed over.
inline void bruteforce_row(const Problem& p, int q, std::int32_t* idx, float* dist) {
  const float* query = p.queries + std::size_t(q) * p.dim;
  const int self = p.self_join ? q : -1;
  if (p.topk == 1) {  // the seeds' loop, kept literal: strict < keeps the first minimum
    float best = std::numeric_limits<float>::infinity();
    std::int32_t best_index = 0;
    for (int j = 0; j < p.n; ++j) {
      if (j == self) continue;
      const float d = squared_distance(query, p.references + std::size_t(j) * p.dim, p.dim);
      if (d < best) {
        best = d;
        best_index = j;
      }
    }
    idx[0] = best_index;
    dist[0] = best;
    return;
  }
  RowTopK top(idx, dist, p.topk);
  for (int j = 0; j < p.n; ++j)
    if (j != self) top.offer(squared_distance(query, p.references + std::size_t(j) * p.dim, p.dim), j);
  top.finish();
}

// Query q's answer into row q of `out`.
inline void bruteforce_one_query(const Problem& p, int q, Neighbors out) {
  bruteforce_row(p, q, out.indices + std::size_t(q) * p.topk, out.distances + std::size_t(q) * p.topk);
}

// Self-joins for searches that cannot leave the query out (the trees): search the topk + 1
// nearest of each point among all n points, then drop_self() removes the point itself. The point is
// at distance 0, so it is in its own widened row unless more than topk other points sit on it with
// smaller indices; either way the first topk entries that are not the point are the answer.
inline Problem widened_for_self_join(const Problem& p) {
  Problem wide = p;
  wide.topk = p.topk + 1;
  wide.self_join = false;
  return wide;
}

// Row q of the widened answer (p.topk + 1 entries per row) without point q, into row q of `out`.
inline void drop_self(const Problem& p, const std::int32_t* wide_indices, const float* wide_distances, Neighbors out) {
  const int wide = p.topk + 1;
#pragma omp parallel for schedule(static) if (p.m > 4096)
  for (int q = 0; q < p.m; ++q) {
    const std::int32_t* wi = wide_indices + std::size_t(q) * wide;
    const float* wd = wide_distances + std::size_t(q) * wide;
    std::int32_t* oi = out.indices + std::size_t(q) * p.topk;
    float* od = out.distances + std::size_t(q) * p.topk;
    int o = 0;
    for (int j = 0; j < wide && o < p.topk; ++j) {
      if (wi[j] == q) continue;
      oi[o] = wi[j];
      od[o] = wd[j];
      ++o;
    }
  }
}

}  // namespace knn
