#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/common/scan_plan.hpp"
#include "kernels/common/tc_filter.hpp"

namespace knn::gpu {

double tc_score_error_bound(int dim, double half_span, bool split) {
  const int slices = (dim + kTcSliceDims - 1) / kTcSliceDims;
  const double w = double(dim) * half_span * half_span;
  const double products = split ? 7.3 * std::ldexp(1.0, -22) : 1.01 * std::ldexp(1.0, -9);
  const int terms = (split ? 3 : 1) * kTcSliceDims * slices + 1;
  const double rel = products + 3.02 * terms * std::ldexp(1.0, -20) + (dim + 3) * std::ldexp(1.0, -23);
  // Tensor cores may flush subnormal products: an absolute term covers them.
  return 1.01 * rel * w + std::ldexp(1.0, -100);
}

namespace {

// The float at or above x.
float round_up(double x) {
  float f = float(x);
  if (double(f) < x) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

}  // namespace

TcPlan plan_tc(const Problem& p, TcMode mode, int cc_major, long long resident_blocks, bool single_chunk) {
  TcPlan plan;
  const ValueTraits& v = p.values;
  if (mode == TcMode::off) {
    plan.why = "KNN_V15_TC=off";
    return plan;
  }
  if (p.topk != 1) {
    plan.why = fmt::format("topk {}: the filter keeps one neighbour", p.topk);
    return plan;
  }
  if (p.dim > kTcMaxDim) {
    plan.why = fmt::format("k = {} > {}", p.dim, kTcMaxDim);
    return plan;
  }
  if (!v.known) {
    plan.why = "values not examined";
    return plan;
  }
  if (!v.finite) {
    plan.why = "not every value is finite";
    return plan;
  }
  if (cc_major < 8) {
    plan.why = fmt::format("compute capability {}.x has no TF32 tensor cores", cc_major);
    return plan;
  }
  const double mid = 0.5 * (double(v.lowest) + double(v.highest));
  plan.center = float(mid);
  const double half = std::max(double(v.highest) - double(plan.center), double(plan.center) - double(v.lowest));
  plan.split = tc_split(p.dim);
  const double bound = tc_score_error_bound(p.dim, half * (1.0 + std::ldexp(1.0, -20)), plan.split);
  // The scores themselves must stay far from float's overflow.
  if (!(double(p.dim) * half * half * 4.0 < 1e36)) {
    plan.why = fmt::format("values {:g} .. {:g}: scores could overflow", v.lowest, v.highest);
    return plan;
  }
  plan.half_span = round_up(half * (1.0 + std::ldexp(1.0, -20)));
  plan.band = round_up(bound);
  plan.slices = (p.dim + kTcSliceDims - 1) / kTcSliceDims;
  if (mode == TcMode::automatic && (p.dim < kTcMinDim || p.m < kTcMinQueries || p.n < kTcMinRows)) {
    plan.why = fmt::format("k = {}, m = {}, n = {}: the filter pays from k ≥ {}, m ≥ {} and n ≥ {}", p.dim, p.m, p.n,
                           kTcMinDim, kTcMinQueries, kTcMinRows);
    return plan;
  }
  plan.query_groups = (p.m + kTcBlockQueries - 1) / kTcBlockQueries;
  plan.chunk_rows = plan_chunks(p.n, std::size_t(p.dim) * sizeof(float), single_chunk);
  const long long chunk_stages = ((long long)p.n / plan.chunks() + kTcStageRows - 1) / kTcStageRows;
  long long splits = (resident_blocks + plan.query_groups - 1) / plan.query_groups;
  splits = std::min(splits, std::max(1LL, chunk_stages / kTcMinStagesPerBlock));
  plan.splits = int(std::max(1LL, splits));
  plan.chosen = true;
  return plan;
}

}  // namespace knn::gpu
