// v16.tc's plan (kd_tc_plan.hpp).
#include "kernels/trees/gpu_kdtree/kd_tc_plan.hpp"

#include <fmt/format.h>

#include "kernels/bruteforce/detail/filters/tc_tile.hpp"

namespace knn::kd {

namespace {
// Empty where auto takes the scan, else why not.
std::string auto_declines(const Problem& p) {
  if (p.dim < kTcAutoMinDim) return fmt::format("auto: k below {}", kTcAutoMinDim);
  if (p.m < kTcAutoMinQueries) return fmt::format("auto: fewer than {} queries", kTcAutoMinQueries);
  return {};
}
}  // namespace

int tc_leaf_multiple(const std::string& mode, const Problem& p, bool heap, bool compiled) {
  const bool wanted = mode == "on" || (mode == "auto" && auto_declines(p).empty());
  return wanted && heap && compiled && p.dim <= gpu::kTileFoldDims ? 8 : 1;
}

TcLeafPlan plan_tc_leaves(const Problem& p, const std::string& mode, int cc_major, int leaf_size, bool compiled, bool heap) {
  TcLeafPlan plan;
  if (mode == "off") {
    plan.why = "turned off";
  } else if (mode == "auto" && !auto_declines(p).empty()) {
    plan.why = auto_declines(p);
  } else if (!heap) {
    plan.why = "topk 1's pair in registers";
  } else if (p.dim > gpu::kTileFoldDims || !compiled) {
    plan.why = fmt::format("k = {}: the tensor-core scan takes k up to {} compiled in", p.dim, gpu::kTileFoldDims);
  } else if (leaf_size % 8 != 0) {
    plan.why = fmt::format("leaves of {} rows are not whole 8-row groups", leaf_size);
  } else {
    // The scale and the bound depend on the values and k alone; v15's plan takes topk up to 16, so it is asked for topk 1.
    Problem one = p;
    one.topk = 1;
    const gpu::TilePlan tile = gpu::plan_tile(one, Mode::automatic, Mode::on, cc_major);
    if (!tile.chosen) {
      plan.why = tile.why;
    } else {
      plan.on = true;
      plan.center = tile.center, plan.scale = tile.scale, plan.band = tile.band;
    }
  }
  return plan;
}

std::string tc_leaves_text(const TcLeafPlan& plan, const std::string& mode, int max_leaves, unsigned long long tc_visits,
                           unsigned long long warp_scans, unsigned long long visits) {
  if (!plan.on) return fmt::format("leaves scanned on the CUDA cores (tc={}: {})", mode, plan.why);
  return fmt::format(
      "a wave's warp whose 32 queries sit on at most {} (tc_leaves), every heap full, filters them on the tensor cores "
      "one leaf after another (tc={}: fp16 m16n8k16 scores with c = {:g}, s = 2^{}, error bound {:.3g}; candidates take the exact "
      "distance): {} leaf visits in {} warp scans, {:.1f} % of the leaves visited",
      max_leaves == 1 ? std::string("1 leaf") : fmt::format("{} leaves", max_leaves), mode, plan.center, std::ilogb(plan.scale), plan.band, tc_visits, warp_scans,
      visits > 0 ? 100.0 * double(tc_visits) / double(visits) : 0.0);
}

}  // namespace knn::kd
