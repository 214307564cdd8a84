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

// `mode` v16.tc (on, off); `compiled` k compiled into the search
// kernels; `heap` the heap kernel runs (not topk 1's pair in registers).
TcLeafPlan plan_tc_leaves(const Problem& p, const std::string& mode, int cc_major, int leaf_size, bool compiled, bool heap);

// `scans` leaves scanned on the tensor cores by a warp, `visits` leaves visited by all queries.
std::string tc_leaves_text(const TcLeafPlan& plan, const std::string& mode, unsigned long long scans, unsigned long long visits);

}  // namespace knn::kd
