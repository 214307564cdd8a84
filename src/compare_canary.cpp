// `compare` and the host canaries (canary.hpp): where two files' hosts ran at different speeds, the
// host-side results' SLOWER and FASTER say more about the host than about the code. The rule is in
// compare.hpp (HostShift, depends_on_host, with_host_drift) and docs/measurement.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "canary.hpp"
#include "compare.hpp"
#include "gpu_busy.hpp"
#include "stats.hpp"

namespace knn {
namespace {

// Every reading of a file's canaries: medians, minima and maxima.
CanarySpread file_spread(const std::vector<Result>& results) {
  std::vector<ResultCanary> canaries;
  for (const Result& r : results) canaries.push_back(r.canary);
  return canary_spread(canaries);
}

}  // namespace

double HostShift::ratio() const {
  if (!known) return 1;
  return std::abs(std::log(cpu_ratio)) >= std::abs(std::log(mem_ratio)) ? cpu_ratio : mem_ratio;
}

bool HostShift::unsteady() const { return known && std::max(spread_a, spread_b) > kCanarySpreadWarning; }

bool HostShift::moved(double min_effect_pct) const { return known && std::abs(ratio() - 1) * 100 > min_effect_pct; }

bool HostShift::drifted(double min_effect_pct) const { return moved(min_effect_pct) || unsteady(); }

HostShift host_shift(const std::vector<Result>& a, const std::vector<Result>& b) {
  const CanarySpread sa = file_spread(a), sb = file_spread(b);
  HostShift s;
  if (!(sa.cpu_median > 0 && sb.cpu_median > 0 && sa.mem_median > 0 && sb.mem_median > 0)) return s;
  s.known = true;
  s.cpu_ratio = sb.cpu_median / sa.cpu_median;
  s.mem_ratio = sa.mem_median / sb.mem_median;
  s.spread_a = std::max(sa.cpu_ratio(), sa.mem_ratio());
  s.spread_b = std::max(sb.cpu_ratio(), sb.mem_ratio());
  return s;
}

bool depends_on_host(const Result& r) {
  if (r.family == "cpu" || r.devices_used.empty()) return true;
  // Its GPUs were idle over a tenth of the call (one traced call, gpu_busy.hpp): that part is the
  // host's launches and waits, which run at the host's speed.
  if (host_bound(r.gpu_busy, r.stats.median)) return true;
  const auto build = r.phase_samples_ms.find("build");
  return build != r.phase_samples_ms.end() && !build->second.empty() && r.stats.median > 0 &&
         median_of(build->second) >= 0.5 * r.stats.median;
}

ComparedPair with_host_drift(ComparedPair p, const Result& a, const Result& b, const HostShift& shift, const CompareOptions& opts) {
  if (!shift.drifted(opts.min_effect_pct) || !depends_on_host(a) || !depends_on_host(b)) return p;
  // Either way: the canary times one thread and one memory read, while a host-bound result may use
  // every core, and on a host whose speed changes per process the two parts of the canary need not
  // move together (an H100 machine: CPU loop x1.03, memory read x0.90, and a 16-thread tree 5.8 %
  // slower in the same pair of runs). Only `ab` judges these results.
  if (p.verdict == Verdict::slower || p.verdict == Verdict::faster) {
    p.verdict = Verdict::host_drift;
    // The canaries' ratio where it moved; 0 where only a run's own spread did (the note says so).
    p.host_ratio = shift.moved(opts.min_effect_pct) ? shift.ratio() : 0;
  }
  return p;
}

std::vector<std::string> host_drift_notes(const HostShift& shift, const CompareReport& rep) {
  if (!shift.known) return {};
  const double threshold = rep.options.min_effect_pct;
  if (!shift.drifted(threshold)) return {};
  int drifted = 0;
  for (const ComparedPair& p : rep.pairs) drifted += p.verdict == Verdict::host_drift;
  std::string why;
  if (shift.moved(threshold))
    why = fmt::format("the hosts ran at different speeds: the canary's CPU loop took {:.3f}x as long in B, its memory read {:.3f}x as "
                      "long (beyond --threshold {}%)",
                      shift.cpu_ratio, shift.mem_ratio, threshold);
  if (shift.unsteady())
    why += fmt::format("{}the host changed speed during {}: the canary's max/min within A is {:.2f}, within B {:.2f} (over {}, "
                       "where `report` warns)",
                       why.empty() ? "" : "; and ", shift.spread_a > kCanarySpreadWarning && shift.spread_b > kCanarySpreadWarning ? "both runs"
                                                    : shift.spread_a > kCanarySpreadWarning                                      ? "run A"
                                                                                                                                 : "run B",
                       shift.spread_a, shift.spread_b, kCanarySpreadWarning);
  return {fmt::format("{}. {} result{} that depend{} on the host (no GPU, a host-side build over half the time, or GPUs busy under "
                      "{:.0f} % of the call) moved by more than the threshold: HOST DRIFT, whichever way they moved, not counted in "
                      "the exit code; run `knnbench ab` for a verdict on them. GPU-bound results keep their verdicts.",
                      why, drifted, drifted == 1 ? "" : "s", drifted == 1 ? "s" : "", 100 * kGpuBoundShare)};
}

}  // namespace knn
