#pragma once
// Sample statistics and the Mann–Whitney U test: what reporters and `compare` compute from raw
// samples. Nothing here measures.
#include <vector>

namespace knn {

struct Stats {
  int samples = 0;
  double median = 0, min = 0, max = 0, mean = 0, stdev = 0;
  double noise_pct = 0;  // relative standard deviation, stdev / mean × 100
};

// Sample statistics (stdev with n − 1; 0 for a single sample).
Stats summarize(const std::vector<double>& samples);
double median_of(std::vector<double> v);

// Two-sided p-value of the Mann–Whitney U test: exact when there are no ties and
// n_a·n_b ≤ 400, else the normal approximation with tie and continuity corrections.
// NaN when either side is empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace knn
