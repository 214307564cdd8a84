#pragma once
// Host-side top-k helpers shared by the CPU versions (v0, trees) and the validation reference.
#include <cstdint>
#include <limits>

#include "problem.hpp"

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

// The best `topk` candidates seen so far, kept sorted by (distance, index).
// Candidates must arrive in increasing index order for the tie rule to hold: a candidate
// enters only when strictly closer than the current worst, and goes after equal distances,
// so among equal distances the smallest index stays first (v0's rule).
class SortedTopK {
 public:
  SortedTopK(std::int32_t* idx, float* dist, int topk) : idx_(idx), dist_(dist), topk_(topk) {
    for (int i = 0; i < topk_; ++i) {
      idx_[i] = -1;
      dist_[i] = std::numeric_limits<float>::infinity();
    }
  }
  float worst() const { return dist_[topk_ - 1]; }
  void offer(float d, std::int32_t index) {
    if (!(d < dist_[topk_ - 1])) return;
    int pos = topk_ - 1;
    while (pos > 0 && dist_[pos - 1] > d) {
      dist_[pos] = dist_[pos - 1];
      idx_[pos] = idx_[pos - 1];
      --pos;
    }
    dist_[pos] = d;
    idx_[pos] = index;
  }

 private:
  std::int32_t* idx_;
  float* dist_;
  int topk_;
};

// Answers query q by exhaustive search; the body of v0 and of the validation reference.
inline void bruteforce_one_query(const Problem& p, int q, Neighbors out) {
  const float* query = p.queries + std::size_t(q) * p.dim;
  std::int32_t* idx = out.indices + std::size_t(q) * p.topk;
  float* dist = out.distances + std::size_t(q) * p.topk;
  if (p.topk == 1) {  // the seeds' loop, kept literal: strict < keeps the first minimum
    float best = std::numeric_limits<float>::infinity();
    std::int32_t best_index = 0;
    for (int j = 0; j < p.n; ++j) {
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
  SortedTopK top(idx, dist, p.topk);
  for (int j = 0; j < p.n; ++j)
    top.offer(squared_distance(query, p.references + std::size_t(j) * p.dim, p.dim), j);
}

}  // namespace knn
