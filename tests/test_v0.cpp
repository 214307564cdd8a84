#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "test_support.hpp"

using namespace knn;
using knn::testing::Dataset;

namespace {

struct V0Out {
  std::vector<std::int32_t> idx;
  std::vector<float> dist;
};

V0Out run_v0(const Problem& p) {
  V0Out o{std::vector<std::int32_t>(p.result_slots(), -7), std::vector<float>(p.result_slots(), -1.f)};
  TimingSink sink;
  Environment env;
  RunContext ctx{sink, env, {}, {}};
  Registry::instance().find("v0")->make()->query(p, Neighbors{o.idx.data(), o.dist.data()}, ctx);
  return o;
}

// Independent check in double: sort all references by (true distance, index).
std::vector<std::int32_t> brute_double(const Problem& p, int q) {
  std::vector<std::int32_t> order(p.n);
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> d(p.n);
  for (int j = 0; j < p.n; ++j) d[j] = true_squared_distance(p, q, j);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return d[a] < d[b]; });
  order.resize(p.topk);
  return order;
}

}  // namespace

TEST(V0, HandMadeKnownAnswer) {
  // Query at the origin; references at distances 4, 1, 9, 1 (squared): nearest is index 1
  // (index 3 ties and loses: first minimum wins).
  Dataset d(1, 1, {0.f}, {2.f, -1.f, 3.f, 1.f});
  const auto o = run_v0(d.problem);
  EXPECT_EQ(o.idx[0], 1);
  EXPECT_EQ(o.dist[0], 1.f);
}

TEST(V0, TopkOrdersTiesByIndex) {
  Dataset d(2, 4, {0.f, 0.f}, {1.f, 0.f, 0.f, 2.f, 0.f, 1.f, -1.f, 0.f, 0.f, 0.5f});
  const auto o = run_v0(d.problem);
  EXPECT_EQ(o.idx, (std::vector<std::int32_t>{4, 0, 2, 3}));
  EXPECT_EQ(o.dist, (std::vector<float>{0.25f, 1.f, 1.f, 1.f}));
}

TEST(V0, DuplicatePointsPickTheFirst) {
  Dataset d(3, 1, {0.1f, 0.2f, 0.3f}, {0.5f, 0.5f, 0.5f, 0.1f, 0.2f, 0.3f, 0.1f, 0.2f, 0.3f});
  const auto o = run_v0(d.problem);
  EXPECT_EQ(o.idx[0], 1);
  EXPECT_EQ(o.dist[0], 0.f);
}

struct Awkward {
  int dim, m, n, topk;
  Distribution dist;
};

class V0Awkward : public ::testing::TestWithParam<Awkward> {};

TEST_P(V0Awkward, MatchesADoubleBruteForce) {
  const auto a = GetParam();
  Dataset d(a.dim, a.m, a.n, a.topk, a.dist, 1000 + a.dim * 7 + a.n);
  const auto o = run_v0(d.problem);
  for (int q = 0; q < a.m; ++q) {
    const auto want = brute_double(d.problem, q);
    for (int j = 0; j < a.topk; ++j) {
      const std::int32_t got = o.idx[std::size_t(q) * a.topk + j];
      ASSERT_GE(got, 0);
      ASSERT_LT(got, a.n);
      const double dg = true_squared_distance(d.problem, q, got), dw = true_squared_distance(d.problem, q, want[j]);
      ASSERT_NEAR(dg, dw, 1e-5 * dw + 1e-9) << "query " << q << " rank " << j;
      ASSERT_NEAR(o.dist[std::size_t(q) * a.topk + j], dg, 1e-5 * dg + 1e-7);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, V0Awkward,
                         ::testing::Values(Awkward{3, 10, 1, 1, Distribution::uniform}, Awkward{1, 50, 300, 1, Distribution::uniform},
                                           Awkward{7, 40, 513, 1, Distribution::uniform}, Awkward{32, 20, 700, 1, Distribution::uniform},
                                           Awkward{3, 1000, 200, 1, Distribution::uniform}, Awkward{4, 3, 100003, 1, Distribution::uniform},
                                           Awkward{3, 30, 400, 8, Distribution::duplicates}, Awkward{16, 30, 400, 32, Distribution::clusters},
                                           Awkward{2, 5, 9, 9, Distribution::uniform}));
