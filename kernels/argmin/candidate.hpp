#pragma once
// What the GPU argmin versions (v1–v9) pass around, visible to host and device code alike: one
// reference proposed as a query's nearest, the one merge of such proposals, and the answer it gives.
#include <cmath>
#include <cstdint>

#include "core/order.hpp"

namespace knn::gpu {

// One reference proposed as a query's nearest: its squared distance and its index.
struct Candidate {
  float distance;
  std::int32_t index;
};

// Index of "no reference seen yet". It sorts after every real index, so the (distance, index)
// order needs no special case; answers turn it into index 0 with an infinite distance, which is
// what v0 returns when no distance is finite.
constexpr std::int32_t kNoIndex = INT32_MAX;

// Threads per block of every search kernel: the seeds' 1024 (the hardware maximum). The shared
// tree reductions need a power of two.
constexpr int kSearchThreads = 1024;
static_assert((kSearchThreads & (kSearchThreads - 1)) == 0, "tree reductions need a power of two");

KNN_HOST_DEVICE Candidate no_candidate() { return {INFINITY, kNoIndex}; }

// True when a comes before b in the order of a result row (knn::before).
KNN_HOST_DEVICE bool precedes(const Candidate& a, const Candidate& b) {
  return before<const float&, const std::int32_t&>(a.distance, a.index, b.distance, b.index);
}

// The merge of partial argmin results, wherever they meet: folds into `best` the candidates at(i)
// for i = begin, begin + step, ... below end, each taken when it comes before the best so far (v7's
// host second level over a query's blocks, v8/v9's merge over GPUs, a warp's lanes in the test-only
// t5). The order is total, so the result does not depend on how the partials were grouped.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable
#endif
template <class At>
KNN_HOST_DEVICE Candidate merge_candidates(Candidate best, int begin, int end, int step, const At& at) {
  for (int i = begin; i < end; i += step) {
    const Candidate other = at(i);
    if (precedes(other, best)) best = other;
  }
  return best;
}

// Writes query q's answer: v0 answers index 0 with an infinite distance when nothing was finite.
KNN_HOST_DEVICE void store_answer(const Candidate& c, long long q, std::int32_t* indices, float* distances) {
  indices[q] = c.index == kNoIndex ? 0 : c.index;
  distances[q] = c.distance;
}

}  // namespace knn::gpu
