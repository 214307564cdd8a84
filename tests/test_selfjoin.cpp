// v0's loop (core/topk.hpp), which is also the validation reference, on self-joins and top-k:
// checked against an independent answer computed in double and sorted by (distance, index).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

#include "core/topk.hpp"
#include "data.hpp"

namespace {

struct Param {
  int dim, n, topk;
  knn::Distribution dist;
  bool self_join;
};

// The k nearest by (exact double distance, index), the query itself left out in a self-join.
// Inputs of the integers/duplicates distributions are exact in float, so float sums of their
// squares are exact too and the double order is v0's order.
std::vector<std::int32_t> expected_row(const std::vector<float>& q, const std::vector<float>& r, int dim, int n, int topk, int query,
                                       bool self_join) {
  std::vector<std::pair<double, std::int32_t>> all;
  for (int j = 0; j < n; ++j) {
    if (self_join && j == query) continue;
    double d = 0;
    for (int t = 0; t < dim; ++t) {
      const double diff = double(q[std::size_t(query) * dim + t]) - double(r[std::size_t(j) * dim + t]);
      d += diff * diff;
    }
    all.emplace_back(d, j);
  }
  std::sort(all.begin(), all.end());
  std::vector<std::int32_t> out;
  for (int i = 0; i < topk; ++i) out.push_back(all[std::size_t(i)].second);
  return out;
}

class SelfJoinTopk : public ::testing::TestWithParam<Param> {};

TEST_P(SelfJoinTopk, V0MatchesAnIndependentAnswer) {
  const Param c = GetParam();
  const int m = c.self_join ? c.n : 17;
  std::vector<float> r(std::size_t(c.n) * c.dim), q;
  knn::generate_points(c.dist, 99 + c.n, knn::PointSet::references, c.dim, std::size_t(c.n), r.data(), 4);
  if (c.self_join) {
    q = r;
  } else {
    q.resize(std::size_t(m) * c.dim);
    knn::generate_points(c.dist, 99 + c.n, knn::PointSet::queries, c.dim, std::size_t(m), q.data(), 4);
  }
  knn::Problem p{c.dim, m, c.n, c.topk, q.data(), c.self_join ? q.data() : r.data(), c.self_join};
  std::vector<std::int32_t> idx(p.result_slots(), -7);
  std::vector<float> dist(p.result_slots(), -1.f);
  for (int i = 0; i < m; ++i) knn::bruteforce_one_query(p, i, knn::Neighbors{idx.data(), dist.data()});
  for (int i = 0; i < m; ++i) {
    const auto want = expected_row(q, c.self_join ? q : r, c.dim, c.n, c.topk, i, c.self_join);
    for (int j = 0; j < c.topk; ++j) {
      const std::int32_t got = idx[std::size_t(i) * c.topk + j];
      if (c.self_join) ASSERT_NE(got, i) << "query " << i << " answered itself at rank " << j;
      ASSERT_EQ(got, want[std::size_t(j)]) << "query " << i << " rank " << j;
      if (j > 0) ASSERT_LE(dist[std::size_t(i) * c.topk + j - 1], dist[std::size_t(i) * c.topk + j]);
    }
  }
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (int topk : {1, 2, 5, 31, 32, 33, 64})
    for (int n : {65, 1000}) out.push_back({3, n, topk, knn::Distribution::integers, true});
  for (int n : {2, 33, 1000}) out.push_back({2, n, 1, knn::Distribution::integers, true});
  for (int dim : {1, 2, 3, 8}) {
    out.push_back({dim, 300, 5, knn::Distribution::integers, true});
    out.push_back({dim, 300, 5, knn::Distribution::duplicates, false});
  }
  out.push_back({4, 100, 99, knn::Distribution::integers, true});  // topk = n - 1: every other point
  return out;
}

INSTANTIATE_TEST_SUITE_P(Cpu, SelfJoinTopk, ::testing::ValuesIn(params()), [](const ::testing::TestParamInfo<Param>& info) {
  const Param& c = info.param;
  return std::string(c.self_join ? "self" : "join") + "_k" + std::to_string(c.dim) + "_n" + std::to_string(c.n) + "_topk" +
         std::to_string(c.topk) + "_" + knn::to_string(c.dist);
});

// All points identical: every other point is at distance 0, so the answer is the smallest other indices.
TEST(SelfJoin, IdenticalPointsAnswerTheSmallestOtherIndices) {
  const int n = 50, topk = 5;
  std::vector<float> pts(std::size_t(n) * 3, 0.25f);
  knn::Problem p{3, n, n, topk, pts.data(), pts.data(), true};
  std::vector<std::int32_t> idx(p.result_slots());
  std::vector<float> dist(p.result_slots());
  for (int i = 0; i < n; ++i) knn::bruteforce_one_query(p, i, knn::Neighbors{idx.data(), dist.data()});
  for (int i = 0; i < n; ++i) {
    std::vector<std::int32_t> want;
    for (int j = 0; want.size() < std::size_t(topk); ++j)
      if (j != i) want.push_back(j);
    EXPECT_EQ(std::vector<std::int32_t>(idx.begin() + i * topk, idx.begin() + (i + 1) * topk), want) << "point " << i;
    for (int j = 0; j < topk; ++j) EXPECT_EQ(dist[std::size_t(i) * topk + j], 0.f);
  }
}

}  // namespace
