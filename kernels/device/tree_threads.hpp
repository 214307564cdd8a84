#pragma once
// How many OpenMP threads a tree version uses for one build or query pass.
#include <omp.h>

#include <climits>

#include "core/environment.hpp"

namespace knn::tree {

// The threads the harness gives this run (all OpenMP threads when it says nothing), or one when
// `work` items are fewer than `serial_below`: waking a thread team costs more than it saves there.
inline int tree_threads(const Environment& env, long long work = LLONG_MAX, long long serial_below = 0) {
  if (work < serial_below) return 1;
  return env.omp_threads > 0 ? env.omp_threads : omp_get_max_threads();
}

}  // namespace knn::tree
