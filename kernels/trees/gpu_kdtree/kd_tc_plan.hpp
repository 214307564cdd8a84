#pragma once
// v16.tc's plan (the sorted waves' shared leaves scanned on the tensor cores, kdtree_gpu_tc.cuh): where it
// applies, the scores' centre, scale and error bound (v15's tile filter's, kernels/bruteforce/detail/filters/
// tc_tile.hpp), and the words the path gives it. Plain C++: the CPU tests check it.
#include <string>

#include "core/problem.hpp"

namespace knn::kd {

struct TcLeafPlan {
  bool on = false;
  std::string why;  // when off: the reason
  float center = 0.f, scale = 1.f, band = 0.f;
};

// v16.tc=auto takes the scan from k 6 with at least 2^16 queries (below either the scalar scan was as fast
// or faster on an H200: docs/v16.md).
inline constexpr int kTcAutoMinDim = 6;
inline constexpr long long kTcAutoMinQueries = 1 << 16;
// The rows a leaf must be a multiple of for v16.tc `mode` on problem `p` with the heap kernel (`heap`) and
// k compiled into the search kernels (`compiled`): 8 where the scan is wanted (whole 8-row groups), else 1.
int tc_leaf_multiple(const std::string& mode, const Problem& p, bool heap, bool compiled);

// `mode` v16.tc (auto, on, off); `compiled` k compiled into the search
// kernels; `heap` the heap kernel runs (not topk 1's pair in registers).
TcLeafPlan plan_tc_leaves(const Problem& p, const std::string& mode, int cc_major, int leaf_size, bool compiled, bool heap);

// `tc_visits` leaf visits scanned on the tensor cores, in `warp_scans` scans by a warp on at most `max_leaves`
// leaves (v16.tc_leaves); `visits` leaves visited by all queries.
std::string tc_leaves_text(const TcLeafPlan& plan, const std::string& mode, int max_leaves, unsigned long long tc_visits,
                           unsigned long long warp_scans, unsigned long long visits);

}  // namespace knn::kd
