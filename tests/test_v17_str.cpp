// The STR packing of v17's R-trees (kernels/trees/rtree/str_pack.hpp), host reference builder: every
// point in exactly one leaf, every box the tight union of its children, fan-out respected, each
// level's nodes the children of exactly one parent, over odd sizes, dimensions, fan-outs and data
// full of ties; the slab order itself on small shapes; the plan's arithmetic and its errors.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "data.hpp"
#include "kernels/trees/rtree/str_pack.hpp"

using namespace knn;

namespace {

std::vector<float> points_for(Distribution dist, std::uint64_t seed, int dim, std::int64_t n,
                              std::uint32_t integer_max = kDefaultIntegerMax) {
  std::vector<float> p(std::size_t(n) * dim);
  generate_points(dist, seed, PointSet::references, dim, std::size_t(n), p.data(), integer_max);
  return p;
}

// Checks every structural property of `t` built from `input` (gtest failures name the case).
void check_tree(const str::Tree& t, const std::vector<float>& input, const std::string& name) {
  const str::Shape& s = t.shape;
  const int dim = s.dim, fanout = s.fanout;
  const std::int64_t n = s.n;
  ASSERT_EQ(s.level_begin.front(), 0) << name;
  ASSERT_EQ(s.level_begin[s.levels()] - s.level_begin[s.levels() - 1], 1) << name << ": the top level is one root";
  ASSERT_EQ(t.index.size(), std::size_t(n)) << name;
  ASSERT_EQ(t.lo.size(), std::size_t(s.nodes()) * dim) << name;

  // Every input row appears exactly once, and the packed rows are the input rows.
  std::vector<int> seen(std::size_t(n), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int32_t r = t.index[i];
    ASSERT_TRUE(r >= 0 && r < n) << name << ": index " << r;
    ++seen[r];
    for (int k = 0; k < dim; ++k)
      ASSERT_EQ(t.points[std::size_t(i) * dim + k], input[std::size_t(r) * dim + k]) << name << " row " << i;
  }
  for (std::int64_t r = 0; r < n; ++r) ASSERT_EQ(seen[r], 1) << name << ": point " << r << " packed " << seen[r] << " times";

  // Each level's child ranges cover the level below exactly once (positions for the leaves).
  for (int level = 0; level < s.levels(); ++level) {
    const std::int64_t below_first = level == 0 ? 0 : s.level_begin[level - 1];
    const std::int64_t below_count = level == 0 ? n : s.level_begin[level] - below_first;
    std::vector<int> covered(std::size_t(below_count), 0);
    int short_nodes = 0;  // STR packs full runs: one node per level may be short (the level above moves it)
    for (std::int64_t node = s.level_begin[level]; node < s.level_begin[level + 1]; ++node) {
      const std::int64_t b = t.begin[node], e = t.end[node];
      ASSERT_TRUE(b >= below_first && b < e && e <= below_first + below_count)
          << name << ": node " << node << " children [" << b << ", " << e << ")";
      ASSERT_LE(e - b, fanout) << name << ": node " << node << " over the fan-out";
      short_nodes += e - b < fanout;
      for (std::int64_t c = b; c < e; ++c) ++covered[std::size_t(c - below_first)];
      // The box is the tight union of the children's boxes (or rows).
      for (int k = 0; k < dim; ++k) {
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (std::int64_t c = b; c < e; ++c) {
          const float clo = level == 0 ? t.points[std::size_t(c) * dim + k] : t.lo[std::size_t(c) * dim + k];
          const float chi = level == 0 ? t.points[std::size_t(c) * dim + k] : t.hi[std::size_t(c) * dim + k];
          EXPECT_LE(t.lo[std::size_t(node) * dim + k], clo) << name << ": node " << node << " child " << c;
          EXPECT_GE(t.hi[std::size_t(node) * dim + k], chi) << name << ": node " << node << " child " << c;
          lo = std::min(lo, clo);
          hi = std::max(hi, chi);
        }
        EXPECT_EQ(t.lo[std::size_t(node) * dim + k], lo) << name << ": node " << node << " not tight in dim " << k;
        EXPECT_EQ(t.hi[std::size_t(node) * dim + k], hi) << name << ": node " << node << " not tight in dim " << k;
      }
    }
    EXPECT_LE(short_nodes, 1) << name << ": level " << level;
    for (std::int64_t c = 0; c < below_count; ++c)
      ASSERT_EQ(covered[c], 1) << name << ": level " << level << " child " << c << " has " << covered[c] << " parents";
  }
}

struct StrCase {
  std::int64_t n;
  int dim, fanout;
  Distribution dist;
  std::uint32_t integer_max;
};

TEST(V17Str, EveryPointInOneLeafAndEveryBoxHoldsItsChildren) {
  std::vector<StrCase> cases;
  for (std::int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 1023, 1025, 4097})
    for (int dim : {1, 2, 3, 8, 16})
      for (int fanout : {16, 23, 32, 64}) cases.push_back({n, dim, fanout, Distribution::uniform, 0});
  for (int fanout : {16, 32, 64}) {
    cases.push_back({20000, 3, fanout, Distribution::clusters, 0});
    cases.push_back({5000, 8, fanout, Distribution::integers, 4});  // ties in every key
    cases.push_back({3000, 2, fanout, Distribution::duplicates, 0});
    cases.push_back({70000, 2, fanout, Distribution::uniform, 0});  // four levels at fan-out 16
  }
  for (const auto& c : cases) {
    const std::string name = fmt::format("n{}_k{}_f{}_{}", c.n, c.dim, c.fanout, to_string(c.dist));
    const auto input = points_for(c.dist, 1700 + std::uint64_t(c.n), c.dim, c.n, c.integer_max ? c.integer_max : kDefaultIntegerMax);
    const str::Tree t = str::build_host(input.data(), c.n, c.dim, c.fanout);
    check_tree(t, input, name);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(V17Str, OneDimensionPacksInSortedOrder) {
  const auto input = points_for(Distribution::uniform, 17, 1, 999);
  const str::Tree t = str::build_host(input.data(), 999, 1, 16);
  EXPECT_TRUE(std::is_sorted(t.points.begin(), t.points.end()));
  // The leaves' level is re-ordered by the level above, but with one dimension it stays in order.
  for (std::int64_t leaf = 1; leaf < t.shape.leaves(); ++leaf) EXPECT_LE(t.hi[leaf - 1], t.lo[leaf]) << leaf;
}

// 2-D, 16 groups of 16: four slabs of 64 points cut by x, each sorted by y into four leaves.
TEST(V17Str, TwoDimensionsCutSlabsByXThenLeavesByY) {
  const auto input = points_for(Distribution::uniform, 18, 2, 256);
  const str::LevelPlan plan = str::plan_level(256, 2, 16);
  ASSERT_EQ(plan.sort_dims, 2);
  EXPECT_EQ(plan.segment, (std::vector<std::int64_t>{256, 64}));
  const std::vector<std::int32_t> order = str::str_order(input.data(), 256, 2, 16);
  auto x = [&](int i) { return input[std::size_t(order[i]) * 2]; };
  auto y = [&](int i) { return input[std::size_t(order[i]) * 2 + 1]; };
  for (int slab = 0; slab + 1 < 4; ++slab) {
    float right = -1.f, next_left = 2.f;
    for (int i = slab * 64; i < (slab + 1) * 64; ++i) right = std::max(right, x(i));
    for (int i = (slab + 1) * 64; i < (slab + 2) * 64; ++i) next_left = std::min(next_left, x(i));
    EXPECT_LE(right, next_left) << "slab " << slab;
  }
  for (int i = 1; i < 256; ++i)
    if (i % 64 != 0) EXPECT_LE(y(i - 1), y(i)) << "position " << i;
}

TEST(V17Str, PlanCountsLevelsAndRejectsBadShapes) {
  const str::Shape s = str::plan_tree(70000, 2, 16);  // 4375 leaves, 274, 18, 2, 1
  EXPECT_EQ(s.level_begin, (std::vector<std::int64_t>{0, 4375, 4375 + 274, 4375 + 274 + 18, 4375 + 274 + 18 + 2,
                                                       4375 + 274 + 18 + 2 + 1}));
  EXPECT_EQ(str::plan_tree(1, 3, 32).levels(), 1);
  EXPECT_EQ(str::plan_tree(33, 3, 32).levels(), 2);
  // 16-D with 64 groups: six dimensions in play, two slabs each.
  const str::LevelPlan p = str::plan_level(64 * 32, 16, 32);
  EXPECT_EQ(p.sort_dims, 6);
  EXPECT_EQ(p.segment.front(), 64 * 32);
  EXPECT_EQ(p.segment.back(), 2 * 32);
  // 313 groups in 8-D: eight dimensions, slabs 3, 2, 2, ... (384 >= 313; 3^8 would over-cut).
  const str::LevelPlan q = str::plan_level(10000, 8, 32);
  EXPECT_EQ(q.groups, 313);
  EXPECT_EQ(q.sort_dims, 8);
  EXPECT_EQ(q.segment, (std::vector<std::int64_t>{10000, 128 * 32, 64 * 32, 32 * 32, 16 * 32, 8 * 32, 4 * 32, 2 * 32}));
  // One group: nothing to sort.
  EXPECT_EQ(str::plan_level(32, 4, 32).sort_dims, 0);
  auto message = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_NE(message([] { str::plan_tree(0, 3, 32); }).find("n = 0"), std::string::npos);
  EXPECT_NE(message([] { str::plan_tree(10, 0, 32); }).find("k = 0"), std::string::npos);
  EXPECT_NE(message([] { str::plan_tree(10, 3, 15); }).find("fan-out 15"), std::string::npos);
  EXPECT_NE(message([] { str::plan_tree(10, 3, 65); }).find("fan-out 65"), std::string::npos);
}

TEST(V17Str, OrderableBitsFollowTheFloatOrder) {
  std::mt19937 rng(1701);
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  std::vector<float> v = {0.f, -0.f, 1.f, -1.f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                          -std::numeric_limits<float>::denorm_min()};
  for (int i = 0; i < 200; ++i) v.push_back(u(rng));
  for (float a : v)
    for (float b : v) {
      EXPECT_EQ(a < b, str::orderable_bits(a) < str::orderable_bits(b)) << a << " " << b;
      EXPECT_EQ(a == b, str::orderable_bits(a) == str::orderable_bits(b)) << a << " " << b;
    }
}

}  // namespace
