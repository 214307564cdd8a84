#pragma once
// Sample statistics and the Mann–Whitney U test: what reporters and `compare` compute from raw
// samples. Nothing here measures.
#include <vector>

namespace knn {

// Two noises. noise_pct, the relative standard deviation, is what results files have always
// carried; outliers inflate it. median_noise_pct is robust and is the one verdicts and tables use:
// the half-width of the distribution-free ~95 % confidence interval of the median (order
// statistics, see median_interval), relative to the median. It also shrinks as samples grow, so a
// sampler can stop once it is below a target.
struct Stats {
  int samples = 0;
  double median = 0, min = 0, max = 0, mean = 0, stdev = 0;
  double noise_pct = 0;          // stdev / mean × 100
  double median_ci_low = 0, median_ci_high = 0;
  double median_noise_pct = 0;   // (high − low) / 2 / median × 100; NaN under 3 samples
};

// Sample statistics (stdev with n − 1; 0 for a single sample).
Stats summarize(const std::vector<double>& samples);
double median_of(std::vector<double> v);

// The interval [x(l), x(n+1−l)] between order statistics that holds the true median with
// probability 1 − 2·P(Binomial(n, ½) ≤ l − 1) ≥ 95 %, l as large as that allows. No interval
// reaches 95 % under 6 samples: there it is [min, max] (coverage 1 − 2^(1−n)); under 3, NaN.
struct MedianInterval {
  double low, high;
  double coverage;  // the probability above
};
MedianInterval median_interval(std::vector<double> samples);
// median_noise_pct of these samples (see Stats).
double median_noise_pct(const std::vector<double>& samples);

// Two-sided p-value of the Mann–Whitney U test: exact when there are no ties and
// n_a·n_b ≤ 400, else the normal approximation with tie and continuity corrections.
// NaN when either side is empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);
// The smallest two-sided p the exact test can give n_a against n_b samples: 2 / C(n_a + n_b, n_a).
// When it exceeds α, no data could reject at α (4 against 4: 0.029; 5 against 5: 0.0079).
double mann_whitney_min_p(int na, int nb);

}  // namespace knn
