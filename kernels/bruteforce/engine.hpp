#pragma once
// v15's engine (kernels/bruteforce/v15_fused_topk.cu) as a function, for versions that search a part of a
// problem with it (v18 searches each rank's shard): the device is ctx.env.devices[0].
#include "core/problem.hpp"
#include "core/registry.hpp"

namespace knn::gpu {

inline constexpr int kFusedTopkMax = 2048;  // v15's largest topk
void fused_topk_search(const Problem& p, Neighbors out, RunContext& ctx);

}  // namespace knn::gpu
