#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "data.hpp"

using namespace knn;

// The generator is specified (SplitMix64 + a 24-bit mapping), so these values are the same on
// every machine and compiler. The uniform and duplicates values were also reproduced by an
// independent Python implementation of the specification. A change here changes every published checksum: bump the
// results schema and say so.
TEST(Data, GoldenChecksumsForAFixedCaseAndSeed) {
  std::vector<float> q(3 * 1024), r(3 * 65536);
  generate_points(Distribution::uniform, 20240607, PointSet::queries, 3, 1024, q.data());
  generate_points(Distribution::uniform, 20240607, PointSet::references, 3, 65536, r.data());
  EXPECT_EQ(to_hex(checksum(q.data(), q.size())), "af4c2b4bbedb4010");
  EXPECT_EQ(to_hex(checksum(r.data(), r.size())), "48ba736245d9142e");
}

TEST(Data, GoldenChecksumsForClustersAndDuplicates) {
  std::vector<float> c(16 * 1000), d(3 * 1000);
  generate_points(Distribution::clusters, 5, PointSet::references, 16, 1000, c.data());
  generate_points(Distribution::duplicates, 5, PointSet::references, 3, 1000, d.data());
  EXPECT_EQ(to_hex(checksum(c.data(), c.size())), "9d76aa5970bb31bd");
  EXPECT_EQ(to_hex(checksum(d.data(), d.size())), "558bdcef69501725");
}

TEST(Data, SplitMixKnownValue) {
  // SplitMix64 seeded with 0: the first output of the reference implementation.
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);
}

TEST(Data, UniformIsInRangeAndNotDegenerate) {
  std::vector<float> v(100000);
  generate_points(Distribution::uniform, 1, PointSet::queries, 1, v.size(), v.data());
  double sum = 0;
  std::set<float> distinct;
  for (float x : v) {
    ASSERT_GE(x, 0.f);
    ASSERT_LT(x, 1.f);
    sum += x;
    distinct.insert(x);
  }
  EXPECT_NEAR(sum / v.size(), 0.5, 0.01);
  EXPECT_GT(distinct.size(), 99000u);
}

TEST(Data, SeedsAndSetsGiveDifferentStreams) {
  std::vector<float> a(64), b(64), c(64);
  generate_points(Distribution::uniform, 1, PointSet::queries, 4, 16, a.data());
  generate_points(Distribution::uniform, 2, PointSet::queries, 4, 16, b.data());
  generate_points(Distribution::uniform, 1, PointSet::references, 4, 16, c.data());
  EXPECT_NE(checksum(a.data(), 64), checksum(b.data(), 64));
  EXPECT_NE(checksum(a.data(), 64), checksum(c.data(), 64));
}

TEST(Data, DuplicatesLieOnTheGridAndRepeat) {
  std::vector<float> v(3 * 5000);
  generate_points(Distribution::duplicates, 3, PointSet::references, 3, 5000, v.data());
  std::set<std::vector<float>> points;
  for (std::size_t i = 0; i < 5000; ++i) {
    for (int t = 0; t < 3; ++t) ASSERT_EQ(v[i * 3 + t] * 8, std::floor(v[i * 3 + t] * 8));
    points.insert({v[i * 3], v[i * 3 + 1], v[i * 3 + 2]});
  }
  EXPECT_LE(points.size(), 512u);  // 8^3 grid cells: many exact duplicates among 5000 points
}

namespace {
double mean_nn_distance(const std::vector<float>& v, int dim, int n) {
  double total = 0;
  for (int i = 0; i < n; ++i) {
    double best = 1e300;
    for (int j = 0; j < n; ++j) {
      if (j == i) continue;
      double s = 0;
      for (int t = 0; t < dim; ++t) s += double(v[i * dim + t] - v[j * dim + t]) * (v[i * dim + t] - v[j * dim + t]);
      best = std::min(best, s);
    }
    total += std::sqrt(best);
  }
  return total / n;
}
}  // namespace

TEST(Data, ClustersAreDenserThanUniform) {
  const int dim = 8, n = 1500;
  std::vector<float> c(dim * n), u(dim * n);
  generate_points(Distribution::clusters, 9, PointSet::references, dim, n, c.data());
  generate_points(Distribution::uniform, 9, PointSet::references, dim, n, u.data());
  for (float x : c) ASSERT_TRUE(std::isfinite(x));
  // 16 blobs of sigma 0.05: neighbours are far closer than in uniform data of the same size.
  EXPECT_LT(mean_nn_distance(c, dim, n), 0.5 * mean_nn_distance(u, dim, n));
}

TEST(Data, ChecksumSeesEveryByte) {
  std::vector<float> v(1001, 0.25f);
  const auto h = checksum(v.data(), v.size());
  v[1000] = 0.5f;
  EXPECT_NE(h, checksum(v.data(), v.size()));
  EXPECT_NE(checksum(v.data(), 1000), checksum(v.data(), 1001));
}

// The integers distribution (seed 003's rand() % MAX): whole numbers in [0, max), every value of a
// small range present, deterministic, and independent of the thread count.
TEST(Data, IntegersAreWholeNumbersBelowMaxAndCoverTheRange) {
  for (std::uint32_t max : {1u, 2u, 100u, 1000u}) {
    std::vector<float> a(8 * 5000), b(8 * 5000);
    generate_points(Distribution::integers, 7, PointSet::references, 8, 5000, a.data(), max);
    generate_points(Distribution::integers, 7, PointSet::references, 8, 5000, b.data(), max);
    EXPECT_EQ(checksum(a.data(), a.size()), checksum(b.data(), b.size())) << "max " << max;
    std::set<float> seen;
    for (float x : a) {
      ASSERT_EQ(x, std::floor(x)) << "max " << max;
      ASSERT_GE(x, 0.f);
      ASSERT_LT(x, float(max));
      seen.insert(x);
    }
    EXPECT_EQ(seen.size(), std::min<std::size_t>(max, 1000)) << "max " << max;
  }
  // Different max, different data; the queries are their own stream.
  std::vector<float> q(8 * 100), r(8 * 100);
  generate_points(Distribution::integers, 7, PointSet::queries, 8, 100, q.data(), 100);
  generate_points(Distribution::integers, 7, PointSet::references, 8, 100, r.data(), 100);
  EXPECT_NE(checksum(q.data(), q.size()), checksum(r.data(), r.size()));
}
