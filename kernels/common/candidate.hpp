#pragma once
// What the GPU argmin versions (v1–v9) pass around, visible to host and device code alike.
#include <cstdint>

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

}  // namespace knn::gpu
