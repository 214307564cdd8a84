#pragma once
// Host-side pruning pieces shared by the tree versions (v10-v13): the box lower bound, its safety
// margin and the pruning test. The row order and the top-k row itself are the core's
// (core/order.hpp, core/topk.hpp). Plain C++ (no CUDA headers): the CPU versions build without CUDA.
#include <cstdint>

#include "core/topk.hpp"

namespace knn::tree {

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
