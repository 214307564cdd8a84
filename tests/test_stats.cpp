// stats: the order-statistic interval of the median, the robust noise and the U test's reach.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stats.hpp"

namespace {

std::vector<double> shuffled_ranks(std::mt19937& rng, int n) {
  std::vector<double> v;
  std::uniform_real_distribution<double> jitter(0.0, 0.5);
  for (int i = 1; i <= n; ++i) v.push_back(i + jitter(rng));  // value i+jitter has rank i
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

}  // namespace

TEST(MedianInterval, TabulatedOrderStatistics) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  // Ranks (l, n+1−l) of the 95 % interval in the usual tables; under 6 samples, [min, max].
  for (const auto& [n, l] : std::vector<std::pair<int, int>>{{3, 1}, {5, 1}, {6, 1}, {9, 2}, {10, 2}, {20, 6}, {100, 40}}) {
    const auto v = shuffled_ranks(rng, n);
    const auto ci = knn::median_interval(v);
    EXPECT_EQ(int(ci.low), l) << "n = " << n;
    EXPECT_EQ(int(ci.high), n + 1 - l) << "n = " << n;
    if (n >= 6)
      EXPECT_GE(ci.coverage, 0.95) << "n = " << n;
    else
      EXPECT_NEAR(ci.coverage, 1 - std::pow(2.0, 1 - n), 1e-12);
  }
  EXPECT_TRUE(std::isnan(knn::median_interval({1.0, 2.0}).low));
  EXPECT_TRUE(std::isnan(knn::median_noise_pct({1.0})));
}

TEST(MedianInterval, RobustNoiseIgnoresOutliersThatInflateTheStdev) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(1.0, 0.01);
  std::vector<double> v;
  for (int i = 0; i < 200; ++i) v.push_back(d(rng));
  for (int i = 0; i < 20; ++i) v[std::size_t(i) * 10] = 10 + i;  // 10 % of calls hit by something else
  const knn::Stats s = knn::summarize(v);
  EXPECT_GT(s.noise_pct, 100);           // stdev/mean: dominated by the outliers
  EXPECT_LT(s.median_noise_pct, 0.5);    // the median's interval barely moves
  EXPECT_LE(s.median_ci_low, s.median);
  EXPECT_GE(s.median_ci_high, s.median);
  // And it shrinks with more samples of the same spread: on average over draws of 9 calls (one draw of 9
  // can land inside the 200 calls' interval by chance, about once in 1700 seeds).
  double few_mean = 0;
  const int draws = 40;
  for (int t = 0; t < draws; ++t) {
    std::vector<double> few;
    for (int i = 0; i < 9; ++i) few.push_back(d(rng));
    few_mean += knn::median_noise_pct(few) / draws;
  }
  EXPECT_GT(few_mean, 1.5 * s.median_noise_pct);  // 2.4x at the least over 100 000 seeds
}

TEST(MedianInterval, CoversTheTrueMedianAtLeastNinetyFivePercentOfTheTime) {
  std::mt19937 rng(2024);  // fixed: a coverage estimate, checked against its own sampling error
  std::exponential_distribution<double> skewed(1.0);
  const double true_median = std::log(2.0);
  for (int n : {12, 40, 150}) {
    int covered = 0;
    const int trials = 2000;
    for (int t = 0; t < trials; ++t) {
      std::vector<double> v;
      for (int i = 0; i < n; ++i) v.push_back(skewed(rng));
      const auto ci = knn::median_interval(v);
      covered += ci.low <= true_median && true_median <= ci.high;
    }
    EXPECT_GE(covered, int(0.94 * trials)) << "n = " << n;  // 0.95 less ~2 standard errors
  }
}

TEST(MannWhitney, SmallestReachablePValue) {
  EXPECT_NEAR(knn::mann_whitney_min_p(4, 4), 2.0 / 70, 1e-12);
  EXPECT_NEAR(knn::mann_whitney_min_p(5, 5), 2.0 / 252, 1e-12);
  EXPECT_NEAR(knn::mann_whitney_min_p(3, 20), 2.0 / 1771, 1e-12);
  EXPECT_DOUBLE_EQ(knn::mann_whitney_min_p(0, 5), 1.0);
  // It is what the exact test gives for completely separated samples.
  EXPECT_NEAR(knn::mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), knn::mann_whitney_min_p(5, 5), 1e-12);
}
