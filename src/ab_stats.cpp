// `knnbench ab`'s statistics: the modes of a side's per-process medians, the interval of the ratio
// B/A, and the verdict. Processes and printing are ab.cpp and ab_format.cpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ab.hpp"
#include "stats.hpp"

namespace knn {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kExactLimit = 2500;  // na·nb up to which U's null distribution is computed exactly

std::vector<double> logs(const std::vector<double>& v) {
  std::vector<double> out;
  for (double x : v) out.push_back(std::log(x));
  return out;
}

double sum_squares(const std::vector<double>& x, std::size_t from, std::size_t to) {
  double mean = 0;
  for (std::size_t i = from; i < to; ++i) mean += x[i];
  mean /= double(to - from);
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += (x[i] - mean) * (x[i] - mean);
  return s;
}

// P(U ≤ u) for u = 0 .. na·nb under the null (no ties), by the recurrence
// p(n, m, u) = n/(n+m)·p(n−1, m, u−m) + m/(n+m)·p(n, m−1, u).
std::vector<double> u_cdf_exact(int na, int nb) {
  std::vector<std::vector<double>> prev(std::size_t(nb) + 1), cur(std::size_t(nb) + 1);
  for (int j = 0; j <= nb; ++j) prev[std::size_t(j)] = {1.0};  // n = 0: U = 0
  for (int i = 1; i <= na; ++i) {
    cur[0] = {1.0};  // m = 0: U = 0
    for (int j = 1; j <= nb; ++j) {
      std::vector<double> p(std::size_t(i) * std::size_t(j) + 1, 0.0);
      const double wi = double(i) / (i + j), wj = double(j) / (i + j);
      const auto& left = prev[std::size_t(j)];  // (i − 1, j): U shifted by j
      const auto& down = cur[std::size_t(j) - 1];  // (i, j − 1)
      for (std::size_t u = 0; u < left.size(); ++u) p[u + std::size_t(j)] += wi * left[u];
      for (std::size_t u = 0; u < down.size(); ++u) p[u] += wj * down[u];
      cur[std::size_t(j)] = std::move(p);
    }
    std::swap(prev, cur);
  }
  std::vector<double> cdf = prev[std::size_t(nb)];
  for (std::size_t u = 1; u < cdf.size(); ++u) cdf[u] += cdf[u - 1];
  return cdf;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The number k of differences cut from each end (the interval is the k-th smallest to the k-th
// largest, 1-based) and the coverage it guarantees, 1 − 2·P(U ≤ k − 1).
std::pair<long, double> moses_rank(int na, int nb, double level) {
  const double half = (1 - level) / 2;
  const long nm = long(na) * nb;
  if (nm <= kExactLimit) {
    const std::vector<double> cdf = u_cdf_exact(na, nb);
    long k = 1;
    while (k < nm / 2 && cdf[std::size_t(k)] <= half) ++k;  // P(U ≤ k) ≤ half: k + 1 is allowed too
    return {k, 1 - 2 * cdf[std::size_t(k - 1)]};
  }
  const double mean = nm / 2.0, sd = std::sqrt(double(nm) * (na + nb + 1) / 12.0);
  auto tail = [&](long c) { return normal_cdf((double(c) + 0.5 - mean) / sd); };  // ≈ P(U ≤ c)
  long k = 1;
  while (k < nm / 2 && tail(k) <= half) ++k;
  return {k, 1 - 2 * tail(k - 1)};
}

double median_sorted(const std::vector<double>& s) {
  const std::size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

}  // namespace

std::vector<AbMode> find_modes(const std::vector<double>& medians_ms, double min_effect_pct) {
  const std::size_t n = medians_ms.size();
  std::vector<int> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = int(i);
  std::sort(order.begin(), order.end(), [&](int x, int y) { return medians_ms[std::size_t(x)] < medians_ms[std::size_t(y)]; });
  std::vector<double> x;
  for (int i : order) x.push_back(std::log(medians_ms[std::size_t(i)]));
  auto mode_of = [&](std::size_t from, std::size_t to) {
    AbMode m;
    std::vector<double> v;
    for (std::size_t i = from; i < to; ++i) {
      m.members.push_back(order[i]);
      v.push_back(medians_ms[std::size_t(order[i])]);
    }
    m.median_ms = median_of(v);
    return m;
  };
  std::size_t cut = 0;  // the first index of the slow cluster; 0: no split
  double gap = -1;
  for (std::size_t i = kAbModeMinCount; n >= 2 * kAbModeMinCount && i + kAbModeMinCount <= n; ++i)
    if (x[i] - x[i - 1] > gap) gap = x[i] - x[i - 1], cut = i;
  if (cut > 0) {
    const double pooled_sd = std::sqrt((sum_squares(x, 0, cut) + sum_squares(x, cut, n)) / double(n - 2));
    if (!(gap > kAbModeGapFactor * pooled_sd && gap > std::log1p(min_effect_pct / 100))) cut = 0;
  }
  if (cut == 0) return {mode_of(0, n)};
  return {mode_of(0, cut), mode_of(cut, n)};
}

ShiftInterval shift_interval(const std::vector<double>& a, const std::vector<double>& b, double level) {
  ShiftInterval out{kNaN, kNaN, kNaN, 0};
  if (a.empty() || b.empty()) return out;
  std::vector<double> d;
  d.reserve(a.size() * b.size());
  for (double y : b)
    for (double x : a) d.push_back(y - x);
  std::sort(d.begin(), d.end());
  const auto [k, coverage] = moses_rank(int(a.size()), int(b.size()), level);
  out.low = d[std::size_t(k - 1)];
  out.high = d[d.size() - std::size_t(k)];
  out.estimate = median_sorted(d);
  out.coverage = coverage;
  return out;
}

AbJudgement judge_ab(const AbSide& a, const AbSide& b, const CompareOptions& opts) {
  AbJudgement j;
  if (a.medians_ms.empty() || b.medians_ms.empty()) return j;
  j.a_median_ms = median_of(a.medians_ms);
  j.b_median_ms = median_of(b.medians_ms);
  j.a_modes = find_modes(a.medians_ms, opts.min_effect_pct);
  j.b_modes = find_modes(b.medians_ms, opts.min_effect_pct);
  j.within_modes = j.a_modes.size() > 1 || j.b_modes.size() > 1;
  const std::vector<double> la = logs(a.medians_ms), lb = logs(b.medians_ms);
  // Each process's mode (stratum): its own side's when bimodal, else the other side's nearest.
  auto strata = [](const std::vector<double>& own_logs, const std::vector<AbMode>& own, const std::vector<AbMode>& other) {
    std::vector<int> s(own_logs.size(), 0);
    if (own.size() > 1) {
      for (int m = 0; m < int(own.size()); ++m)
        for (int i : own[std::size_t(m)].members) s[std::size_t(i)] = m;
    } else if (other.size() > 1) {
      for (std::size_t i = 0; i < own_logs.size(); ++i)
        s[i] = std::abs(own_logs[i] - std::log(other[1].median_ms)) < std::abs(own_logs[i] - std::log(other[0].median_ms)) ? 1 : 0;
    }
    return s;
  };
  const std::vector<int> sa = strata(la, j.a_modes, j.b_modes), sb = strata(lb, j.b_modes, j.a_modes);
  std::vector<double> ra, rb;  // log medians relative to A's median in their mode
  for (int m = 0; m < 2; ++m) {
    std::vector<double> am, bm;
    for (std::size_t i = 0; i < la.size(); ++i)
      if (sa[i] == m) am.push_back(la[i]);
    for (std::size_t i = 0; i < lb.size(); ++i)
      if (sb[i] == m) bm.push_back(lb[i]);
    if (am.empty() || bm.empty()) continue;
    const double centre = median_of(am);
    for (double v : am) ra.push_back(v - centre);
    for (double v : bm) rb.push_back(v - centre);
  }
  j.a_used = int(ra.size());
  j.b_used = int(rb.size());
  if (ra.empty() || rb.empty()) return j;
  j.ratio = j.within_modes ? std::exp(median_of(rb) - median_of(ra)) : j.b_median_ms / j.a_median_ms;
  const ShiftInterval li = shift_interval(ra, rb, 1 - opts.alpha);
  j.ratio_interval = {std::exp(li.low), std::exp(li.high), std::exp(li.estimate), li.coverage};
  j.p_value = mann_whitney_p(ra, rb);
  j.verdict = ab_verdict(j, mann_whitney_min_p(j.a_used, j.b_used), opts);
  return j;
}

Verdict ab_verdict(const AbJudgement& j, double least_p, const CompareOptions& opts) {
  if (least_p > opts.alpha) return Verdict::too_few;
  const bool big = std::abs(j.ratio - 1) * 100 > opts.min_effect_pct && std::abs(j.ratio - 1) * j.a_median_ms > opts.min_change_ms;
  const bool significant = j.p_value && *j.p_value < opts.alpha;
  if (big && significant && j.ratio > 1 && j.ratio_interval.low > 1) return Verdict::slower;
  if (big && significant && j.ratio < 1 && j.ratio_interval.high < 1) return Verdict::faster;
  return Verdict::same;
}

}  // namespace knn
