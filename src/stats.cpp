#include "stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace knn {

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
  return st;
}

}  // namespace knn
