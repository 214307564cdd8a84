#pragma once
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

}  // namespace knn
