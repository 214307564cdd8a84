// `knnbench ab --paired`: both parameter settings in every process, next to each other for each
// (case, version), and the verdict on the per-process ratios B/A (Wilcoxon's signed-rank test and the
// interval of its Walsh averages). A host mode that holds for a whole process slows both settings of
// that process alike and leaves the ratio alone; the unpaired design must see it as noise. With the
// settings' calls interleaved (--interleave, the default), a change within the process does too.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ab.hpp"
#include "core/errors.hpp"
#include "core/params.hpp"
#include "stats.hpp"

namespace knn {
namespace {

// P(W+ ≤ w) for w = 0 .. n(n+1)/2 under the null (no ties, no zero differences): the count of subsets
// of the ranks 1..n with that sum, over 2^n.
std::vector<double> signed_rank_cdf(int n) {
  const std::size_t top = std::size_t(n) * std::size_t(n + 1) / 2;
  std::vector<double> count(top + 1, 0.0);
  count[0] = 1;
  for (int r = 1; r <= n; ++r)
    for (std::size_t s = top; s >= std::size_t(r); --s) count[s] += count[s - std::size_t(r)];
  const double all = std::ldexp(1.0, n);
  double acc = 0;
  for (double& c : count) acc += c, c = acc / all;
  return count;
}

}  // namespace

double signed_rank_p(const std::vector<double>& d) {
  std::vector<double> nz;
  for (double x : d)
    if (x != 0) nz.push_back(x);
  const int n = int(nz.size());
  if (n == 0) return 1;
  std::vector<int> order(std::size_t(n), 0);
  for (int i = 0; i < n; ++i) order[std::size_t(i)] = i;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return std::abs(nz[std::size_t(x)]) < std::abs(nz[std::size_t(y)]); });
  long w_plus = 0;
  for (int r = 0; r < n; ++r)
    if (nz[std::size_t(order[std::size_t(r)])] > 0) w_plus += r + 1;
  const long top = long(n) * (n + 1) / 2;
  const long w = std::min(w_plus, top - w_plus);  // the nearer tail
  const std::vector<double> cdf = signed_rank_cdf(n);
  return std::min(1.0, 2 * cdf[std::size_t(w)]);
}

AbJudgement judge_paired(const AbSide& a, const AbSide& b, const CompareOptions& opts) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < std::min(a.medians_ms.size(), b.medians_ms.size()); ++i) ratios.push_back(b.medians_ms[i] / a.medians_ms[i]);
  return judge_paired_ratios(a, b, ratios, opts);
}

double paired_sample_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || a.size() != b.size()) return std::numeric_limits<double>::quiet_NaN();
  std::vector<double> r;
  for (std::size_t i = 0; i < a.size(); ++i) r.push_back(b[i] / a[i]);
  return median_of(std::move(r));
}

AbJudgement judge_paired_ratios(const AbSide& a, const AbSide& b, const std::vector<double>& ratios, const CompareOptions& opts) {
  AbJudgement j;
  const std::size_t n = std::min({a.medians_ms.size(), b.medians_ms.size(), ratios.size()});
  if (n == 0) return j;
  j.a_median_ms = median_of(a.medians_ms);
  j.b_median_ms = median_of(b.medians_ms);
  j.a_modes = find_modes(a.medians_ms, opts.min_effect_pct);
  j.b_modes = find_modes(b.medians_ms, opts.min_effect_pct);
  j.a_used = j.b_used = int(n);
  j.process_ratios.assign(ratios.begin(), ratios.begin() + std::ptrdiff_t(n));
  std::vector<double> d;  // log(B/A) of each process
  for (std::size_t i = 0; i < n; ++i) d.push_back(std::log(ratios[i]));
  // Walsh averages: their median is the ratio's estimate, their k-th from each end its interval.
  std::vector<double> walsh;
  for (std::size_t x = 0; x < n; ++x)
    for (std::size_t y = x; y < n; ++y) walsh.push_back((d[x] + d[y]) / 2);
  std::sort(walsh.begin(), walsh.end());
  const std::vector<double> cdf = signed_rank_cdf(int(n));
  const double half = opts.alpha / 2;
  std::size_t k = 1;  // the largest k with P(W+ ≤ k − 1) ≤ alpha / 2
  while (k < walsh.size() / 2 && cdf[k] <= half) ++k;
  j.ratio = std::exp(median_of(walsh));
  j.ratio_interval = {std::exp(walsh[k - 1]), std::exp(walsh[walsh.size() - k]), j.ratio, 1 - 2 * cdf[k - 1]};
  j.p_value = signed_rank_p(d);
  j.verdict = ab_verdict(j, 2 * cdf[0], opts);  // 2·P(W+ = 0): n processes all one way
  return j;
}

// --paired: each side parameter's two values, checked: one binary, the same parameters on both sides
// with one value each, at most one per version (two would sweep as a cross product).
std::map<std::string, std::pair<std::string, std::string>> paired_settings(const AbOptions& o) {
  if (o.bin_a != o.bin_b) throw ConfigError("--paired runs both settings in one process: give no --a/--b (or the same binary for both)");
  if (o.params_a.empty() || o.params_a.size() != o.params_b.size())
    throw ConfigError("--paired: give each side the same parameters (--a-param V.NAME=X --b-param V.NAME=Y), one value each");
  std::map<std::string, std::pair<std::string, std::string>> out;
  std::set<std::string> versions;
  for (const std::string& p : o.params_a) {
    const ParamRequest r = parse_param_request(p, "--a-param");
    if (r.values.size() != 1) throw ConfigError(fmt::format("--a-param {}: --paired takes one value per side", p));
    if (!versions.insert(r.version).second)
      throw ConfigError(fmt::format("--a-param {}: --paired takes one parameter per version ({} has two)", p, r.version));
    out[r.version + "." + r.name].first = r.values[0];
  }
  for (const std::string& p : o.params_b) {
    const ParamRequest r = parse_param_request(p, "--b-param");
    const auto it = out.find(r.version + "." + r.name);
    if (it == out.end() || r.values.size() != 1 || !it->second.second.empty())
      throw ConfigError(fmt::format("--b-param {}: under --paired side B sets the parameters side A sets, one value each", p));
    if (r.values[0] == it->second.first) throw ConfigError(fmt::format("--b-param {}: the same value as side A's", p));
    it->second.second = r.values[0];
  }
  return out;
}

// One process's sweep of both settings: "t7.slowdown=0,10" (B first when `b_first`).
std::vector<std::string> paired_sweep(const std::map<std::string, std::pair<std::string, std::string>>& values, bool b_first) {
  std::vector<std::string> out;
  for (const auto& [key, v] : values)
    out.push_back(fmt::format("{}={},{}", key, b_first ? v.second : v.first, b_first ? v.first : v.second));
  return out;
}

// The paired verdict on the rounds where both settings were timed, process by process. A process
// whose two results were interleaved (--interleave, ab's default) gives the median of its pairs'
// ratios B_i/A_i; another, the ratio of its two medians. Why the pairs: the host's speed changes
// within a process too (a 2-core machine: one setting's whole 0.1 s of samples 2x slow in one
// process of eight; a 16-core GPU host: B/A of the medians 0.9 to 1.4 between blocks). Interleaved,
// a slow stretch slows the A and B samples inside it alike, so each pair's ratio keeps the true B/A
// where both medians would move by how much of each side's samples the stretch covered; and the
// median of the pairs ignores the few pairs an edge of the stretch split. Simulated on 200 processes
// with such a stretch (tests/test_ab.cpp, AbStats.PairedSampleRatiosResistASpeedChangeWithinTheProcess):
// the pairs' worst error 2.4 %, the medians' 34 %; without one the two agree.
AbJudgement judge_paired_rounds(const AbRow& row, const CompareOptions& rule) {
  AbSide a, b;
  std::vector<double> ratios;
  bool of_samples = true;
  const auto samples = [](const AbSide& s, std::size_t i) {
    return i < s.interleaved_samples.size() ? s.interleaved_samples[i] : std::vector<double>{};
  };
  for (std::size_t i = 0; i < row.a.rounds.size(); ++i)
    for (std::size_t k = 0; k < row.b.rounds.size(); ++k)
      if (row.a.rounds[i] == row.b.rounds[k]) {
        a.medians_ms.push_back(row.a.medians_ms[i]), a.rounds.push_back(row.a.rounds[i]);
        b.medians_ms.push_back(row.b.medians_ms[k]), b.rounds.push_back(row.b.rounds[k]);
        const double pairs = paired_sample_ratio(samples(row.a, i), samples(row.b, k));
        of_samples = of_samples && std::isfinite(pairs);
        ratios.push_back(std::isfinite(pairs) ? pairs : row.b.medians_ms[k] / row.a.medians_ms[i]);
      }
  AbJudgement j = judge_paired_ratios(a, b, ratios, rule);
  j.ratios_of_samples = of_samples && !ratios.empty();
  return j;
}

}  // namespace knn
