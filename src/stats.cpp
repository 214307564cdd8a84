#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace knn {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

Stats summarize(const std::vector<double>& s) {
  Stats st;
  st.samples = int(s.size());
  if (s.empty()) return st;
  st.median = median_of(s);
  st.min = *std::min_element(s.begin(), s.end());
  st.max = *std::max_element(s.begin(), s.end());
  st.mean = std::accumulate(s.begin(), s.end(), 0.0) / s.size();
  if (s.size() > 1) {
    double acc = 0;
    for (double x : s) acc += (x - st.mean) * (x - st.mean);
    st.stdev = std::sqrt(acc / (s.size() - 1));
  }
  st.noise_pct = st.mean > 0 ? 100.0 * st.stdev / st.mean : 0;
  const MedianInterval ci = median_interval(s);
  st.median_ci_low = ci.low;
  st.median_ci_high = ci.high;
  st.median_noise_pct = st.median > 0 ? 100.0 * (ci.high - ci.low) / 2 / st.median : kNaN;
  return st;
}

MedianInterval median_interval(std::vector<double> v) {
  const int n = int(v.size());
  if (n < 3) return {kNaN, kNaN, kNaN};
  std::sort(v.begin(), v.end());
  // P(B ≤ k) for B ~ Binomial(n, ½), summed from k = 0 in log space (n may be thousands).
  auto log_pmf = [n](int k) { return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) - n * std::log(2.0); };
  int l = 1;                              // 1-based rank of the lower bound
  double below = std::exp(log_pmf(0));    // P(B ≤ l − 1): the chance x(l) lies above the median
  while (l + 1 <= (n + 1) / 2 && 2 * (below + std::exp(log_pmf(l))) <= 0.05) below += std::exp(log_pmf(l++));
  return {v[std::size_t(l - 1)], v[std::size_t(n - l)], 1 - 2 * below};
}

double median_noise_pct(const std::vector<double>& samples) { return summarize(samples).median_noise_pct; }

double mann_whitney_min_p(int na, int nb) {
  if (na <= 0 || nb <= 0) return 1;
  const double log_choose = std::lgamma(na + nb + 1.0) - std::lgamma(na + 1.0) - std::lgamma(nb + 1.0);
  return std::min(1.0, 2 * std::exp(-log_choose));
}

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t na = a.size(), nb = b.size(), n = na + nb;
  if (na == 0 || nb == 0) return kNaN;
  std::vector<std::pair<double, bool>> all;  // value, from a
  all.reserve(n);
  for (double x : a) all.emplace_back(x, true);
  for (double x : b) all.emplace_back(x, false);
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum_a = 0, tie_term = 0;  // tie_term = Σ (t³ − t) over groups of equal values
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double t = double(j - i), mid_rank = 0.5 * double(i + 1 + j);  // ranks i+1 .. j
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum_a += mid_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  const double u_a = rank_sum_a - 0.5 * double(na) * double(na + 1);
  const double u_b = double(na) * double(nb) - u_a;
  const double u_min = std::min(u_a, u_b);

  if (tie_term == 0 && na * nb <= 400) {
    // Exact: count[i][j][u] = orderings of i a's and j b's with U = u (U counts pairs a > b).
    // The largest element is an a (beating all j b's) or a b.
    const std::size_t umax = na * nb;
    std::vector<std::vector<std::vector<double>>> count(na + 1, std::vector<std::vector<double>>(nb + 1, std::vector<double>(umax + 1, 0)));
    for (std::size_t i = 0; i <= na; ++i)
      for (std::size_t j = 0; j <= nb; ++j) {
        if (i == 0 || j == 0) {
          count[i][j][0] = 1;
          continue;
        }
        for (std::size_t u = 0; u <= i * j; ++u) count[i][j][u] = (u >= j ? count[i - 1][j][u - j] : 0) + count[i][j - 1][u];
      }
    const auto& dist = count[na][nb];
    const double total = std::accumulate(dist.begin(), dist.end(), 0.0);
    double tail = 0;
    for (std::size_t u = 0; double(u) <= u_min + 1e-9; ++u) tail += dist[u];
    return std::min(1.0, 2.0 * tail / total);
  }

  const double mean = 0.5 * double(na) * double(nb);
  const double var = double(na) * double(nb) / 12.0 * ((double(n) + 1) - tie_term / (double(n) * double(n - 1)));
  if (!(var > 0)) return 1.0;  // every value equal
  const double z = std::max(0.0, std::abs(u_a - mean) - 0.5) / std::sqrt(var);  // continuity correction
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

}  // namespace knn
