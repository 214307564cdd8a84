// `compare` and the host canaries (canary.hpp): where two files' hosts ran at different speeds, the
// host-side results' SLOWER and FASTER say more about the host than about the code. The rule is in
// compare.hpp (HostShift, depends_on_host, with_host_drift) and docs/measurement.md.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "compare.hpp"
#include "stats.hpp"

namespace knn {
namespace {

// The median of every reading of a file's canaries; 0 without any.
std::pair<double, double> canary_medians(const std::vector<Result>& results) {
  std::vector<ResultCanary> canaries;
  for (const Result& r : results) canaries.push_back(r.canary);
  const CanarySpread s = canary_spread(canaries);
  return {s.cpu_median, s.mem_median};
}

}  // namespace

double HostShift::ratio() const {
  if (!known) return 1;
  return std::abs(std::log(cpu_ratio)) >= std::abs(std::log(mem_ratio)) ? cpu_ratio : mem_ratio;
}

bool HostShift::drifted(double min_effect_pct) const { return known && std::abs(ratio() - 1) * 100 > min_effect_pct; }

HostShift host_shift(const std::vector<Result>& a, const std::vector<Result>& b) {
  const auto [cpu_a, mem_a] = canary_medians(a);
  const auto [cpu_b, mem_b] = canary_medians(b);
  HostShift s;
  if (!(cpu_a > 0 && cpu_b > 0 && mem_a > 0 && mem_b > 0)) return s;
  s.known = true;
  s.cpu_ratio = cpu_b / cpu_a;
  s.mem_ratio = mem_a / mem_b;
  return s;
}

bool depends_on_host(const Result& r) {
  if (r.family == "cpu" || r.devices_used.empty()) return true;
  // Its GPUs were idle over half the call (one traced call, gpu_busy.hpp): the rest is the host's
  // launches and waits, which run at the host's speed.
  if (launch_bound(r.gpu_busy, r.stats.median)) return true;
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
    p.host_ratio = shift.ratio();
  }
  return p;
}

std::vector<std::string> host_drift_notes(const HostShift& shift, const CompareReport& rep) {
  if (!shift.known) return {};
  const double threshold = rep.options.min_effect_pct;
  if (!shift.drifted(threshold)) return {};
  int drifted = 0;
  for (const ComparedPair& p : rep.pairs) drifted += p.verdict == Verdict::host_drift;
  return {fmt::format("the hosts ran at different speeds: the canary's CPU loop took {:.3f}x as long in B, its memory read "
                      "{:.3f}x as long (beyond --threshold {}%). {} result{} that depend{} on the host (no GPU, a host-side build "
                      "over half the time, or GPUs busy under half the call) moved by more than the threshold: HOST DRIFT, whichever way they moved, not counted in the exit code; run `knnbench ab` "
                      "for a verdict on them. GPU results keep their verdicts.",
                      shift.cpu_ratio, shift.mem_ratio, threshold, drifted, drifted == 1 ? "" : "s", drifted == 1 ? "s" : "")};
}

}  // namespace knn
