// Tests of the CPU tree versions (v10 kd-tree, v12 octree) and of the host-side trees they share
// with the GPU versions (v11, v13): exact agreement with the brute-force reference on awkward
// inputs, the tie rule, and the structural invariants of the flat arrays.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/topk.hpp"
#include "kernels/trees/kdtree/kdtree.hpp"
#include "kernels/trees/octree/octree.hpp"
#include "core/registry.hpp"
#include "data.hpp"

namespace {

// How the reference points are laid out; queries are always drawn uniformly around them.
enum class Layout { uniform, grid, plane, identical, clustered, tiny };

const char* name(Layout l) {
  switch (l) {
    case Layout::uniform: return "uniform";
    case Layout::grid: return "grid";
    case Layout::plane: return "plane";
    case Layout::identical: return "identical";
    case Layout::clustered: return "clustered";
    case Layout::tiny: return "tiny";
  }
  return "?";
}

std::vector<float> make_points(Layout layout, int count, int dim, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(std::size_t(count) * dim);
  std::vector<float> same(static_cast<std::size_t>(dim));
  for (auto& x : same) x = u(rng);
  for (int i = 0; i < count; ++i) {
    for (int t = 0; t < dim; ++t) {
      float x = u(rng);
      switch (layout) {
        case Layout::uniform: break;
        case Layout::grid: x = std::round(x * 2.f) / 2.f; break;         // 5 values a coordinate: many duplicates
        case Layout::plane: if (t == dim - 1) x = 0.375f; break;          // last coordinate constant
        case Layout::identical: x = same[std::size_t(t)]; break;          // every point the same
        case Layout::clustered: x = float(i % 3) * 0.5f + 1e-3f * x; break;  // three tight clusters
        case Layout::tiny: x *= 1e-24f; break;  // distinct points whose squared distances all underflow to 0
      }
      v[std::size_t(i) * dim + t] = x;
    }
  }
  return v;
}

std::vector<float> make_queries(Layout layout, int count, int dim, std::mt19937& rng) {
  // Grid queries sit on the grid too, so exact ties between distinct reference indices abound;
  // tiny queries are as tiny as the points, so every float distance is 0 and only the index
  // decides (a prune at bound == worst would lose smaller indices in other cells).
  if (layout == Layout::grid || layout == Layout::tiny) return make_points(layout, count, dim, rng);
  return make_points(Layout::uniform, count, dim, rng);
}

struct Result {
  std::vector<std::int32_t> indices;
  std::vector<float> distances;
};

Result run_version(const std::string& id, const knn::Problem& p, int threads) {
  const knn::VersionDesc* v = knn::Registry::instance().find(id);
  EXPECT_NE(v, nullptr) << id << " is not registered";
  Result r;
  if (v == nullptr) return r;
  knn::Environment env;
  env.omp_threads = threads;
  if (v->supports) {
    const auto reason = v->supports(p, env);
    EXPECT_FALSE(reason.has_value()) << id << " skipped: " << reason.value_or("");
  }
  // Poisoned like the harness does, so an unwritten slot is caught.
  r.indices.assign(p.result_slots(), -7);
  r.distances.assign(p.result_slots(), std::numeric_limits<float>::quiet_NaN());
  knn::TimingSink sink;
  knn::RunContext ctx{sink, env, {}, {}};
  auto instance = v->make();
  instance->build(p, ctx);
  instance->query(p, knn::Neighbors{r.indices.data(), r.distances.data()}, ctx);
  return r;
}

double true_distance(const knn::Problem& p, int q, std::int32_t j) {
  double sum = 0;
  for (int t = 0; t < p.dim; ++t) {
    const double diff = double(p.queries[std::size_t(q) * p.dim + t]) - double(p.references[std::size_t(j) * p.dim + t]);
    sum += diff * diff;
  }
  return sum;
}

// Compares a version's answer with the brute-force reference: indices in range and unique, the
// sorted true distances (recomputed in double) equal within 1e-6 relative; and, because the trees
// are exact with v0's arithmetic and tie rule, the very same (index, float distance) pairs.
void expect_matches_reference(const knn::Problem& p, const Result& r, const std::string& label) {
  ASSERT_EQ(r.indices.size(), p.result_slots());
  std::vector<std::int32_t> ref_idx(std::size_t(p.topk));
  std::vector<float> ref_dist(std::size_t(p.topk));
  int reported = 0;
  // A self-join's reference needs the query's own index: the whole answer, row q taken below.
  std::vector<std::int32_t> all_idx(p.self_join ? p.result_slots() : 0);
  std::vector<float> all_dist(all_idx.size());
  for (int q = 0; q < p.m; ++q) {
    if (p.self_join) {
      knn::bruteforce_one_query(p, q, knn::Neighbors{all_idx.data(), all_dist.data()});
      std::copy_n(all_idx.begin() + std::ptrdiff_t(q) * p.topk, p.topk, ref_idx.begin());
      std::copy_n(all_dist.begin() + std::ptrdiff_t(q) * p.topk, p.topk, ref_dist.begin());
    } else {
      knn::Problem one = p;  // the reference answer for query q alone, into ref_idx / ref_dist
      one.m = 1;
      one.queries = p.queries + std::size_t(q) * p.dim;
      knn::bruteforce_one_query(one, 0, knn::Neighbors{ref_idx.data(), ref_dist.data()});
    }
    if (p.self_join)
      for (int j = 0; j < p.topk; ++j)
        if (r.indices[std::size_t(q) * p.topk + j] == q) ADD_FAILURE() << label << ": query " << q << " answered itself";
    const std::int32_t* idx = &r.indices[std::size_t(q) * p.topk];
    const float* dist = &r.distances[std::size_t(q) * p.topk];
    std::ostringstream problems;
    const int filled = std::min(p.topk, p.n);
    std::set<std::int32_t> seen;
    std::vector<double> got, want;
    for (int j = 0; j < filled; ++j) {
      if (idx[j] < 0 || idx[j] >= p.n) {
        problems << " slot " << j << " index " << idx[j] << " out of range;";
        continue;
      }
      if (!seen.insert(idx[j]).second) problems << " slot " << j << " repeats index " << idx[j] << ";";
      got.push_back(true_distance(p, q, idx[j]));
      want.push_back(true_distance(p, q, ref_idx[std::size_t(j)]));
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    for (std::size_t j = 0; j < got.size() && j < want.size(); ++j)
      if (std::abs(got[j] - want[j]) > 1e-6 * std::max(want[j], 1e-30))
        problems << " rank " << j << " true distance " << got[j] << " vs " << want[j] << ";";
    for (int j = 0; j < p.topk; ++j)
      if (idx[j] != ref_idx[std::size_t(j)] || !(dist[j] == ref_dist[std::size_t(j)] ||
                                                 (std::isinf(dist[j]) && std::isinf(ref_dist[std::size_t(j)]))))
        problems << " slot " << j << " (" << idx[j] << ", " << dist[j] << ") vs v0 (" << ref_idx[std::size_t(j)]
                 << ", " << ref_dist[std::size_t(j)] << ");";
    const std::string text = problems.str();
    if (!text.empty() && reported++ < 3) ADD_FAILURE() << label << " query " << q << ":" << text;
  }
  EXPECT_EQ(reported, 0) << label << ": " << reported << " of " << p.m << " queries differ";
}

struct Case {
  std::string version;
  Layout layout;
  int dim, m, n, topk;
};

std::string case_name(const Case& c) {
  std::ostringstream s;
  s << c.version << "_" << name(c.layout) << "_k" << c.dim << "_m" << c.m << "_n" << c.n << "_topk" << c.topk;
  return s.str();
}

class TreeVersionTest : public ::testing::TestWithParam<Case> {};

TEST_P(TreeVersionTest, MatchesBruteForceExactly) {
  const Case& c = GetParam();
  // A fresh seed per case, never all zeros.
  std::mt19937 rng(std::uint32_t(0x5eed + 7919 * c.n + 131 * c.dim + 17 * c.topk + int(c.layout)));
  const std::vector<float> references = make_points(c.layout, c.n, c.dim, rng);
  const std::vector<float> queries = make_queries(c.layout, c.m, c.dim, rng);
  knn::Problem p;
  p.dim = c.dim;
  p.m = c.m;
  p.n = c.n;
  p.topk = c.topk;
  p.queries = queries.data();
  p.references = references.data();
  for (int threads : {1, 2}) {
    const Result r = run_version(c.version, p, threads);
    expect_matches_reference(p, r, case_name(c) + " threads=" + std::to_string(threads));
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const Layout layouts[] = {Layout::uniform, Layout::grid,      Layout::plane,
                            Layout::identical, Layout::clustered, Layout::tiny};
  for (const char* version : {"v10", "v12"}) {
    const bool octree = std::string(version) == "v12";
    for (Layout layout : layouts) {
      for (int dim : octree ? std::vector<int>{3} : std::vector<int>{2, 3, 5, 16}) {
        for (int n : {1, 2, 17, 1000, 4099}) {
          for (int topk : {1, 5, 32}) {
            if (topk > n) continue;
            out.push_back(Case{version, layout, dim, 61, n, topk});
          }
          if (n <= 1000) out.push_back(Case{version, layout, dim, 13, n, n});  // topk = n
        }
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Trees, TreeVersionTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });

// topk beyond n: the slots past n keep (+inf, -1), as v0 leaves them.
TEST(TreeVersions, TopkBeyondNFillsTheTailLikeV0) {
  std::mt19937 rng(99);
  const std::vector<float> references = make_points(Layout::uniform, 5, 3, rng);
  const std::vector<float> queries = make_queries(Layout::uniform, 4, 3, rng);
  knn::Problem p;
  p.dim = 3;
  p.m = 4;
  p.n = 5;
  p.topk = 9;
  p.queries = queries.data();
  p.references = references.data();
  for (const char* id : {"v10", "v12"}) expect_matches_reference(p, run_version(id, p, 2), id);
}

// Three references at exactly the same distance from the query, mirrored around it so that they
// fall in different cells, the largest index where the search lands first: the smaller indices
// must win, and in index order, for every tree shape. The query sits away from the random cloud
// so that the tied points are its nearest.
// Self-joins: the trees search topk + 1 and drop the point itself; integer data puts many other
// points on top of each point, so the tie rule decides which of them stay.
TEST(TreeVersions, SelfJoinsMatchV0) {
  for (int topk : {1, 5, 31}) {
    for (int n : {2, 33, 1000}) {
      if (topk > n - 1) continue;
      std::vector<float> pts(std::size_t(n) * 3);
      knn::generate_points(knn::Distribution::integers, 11, knn::PointSet::references, 3, std::size_t(n), pts.data(), 6);
      const knn::Problem p{3, n, n, topk, pts.data(), pts.data(), true};
      for (const char* id : {"v10", "v12"})
        expect_matches_reference(p, run_version(id, p, 2), std::string(id) + " n=" + std::to_string(n) + " topk=" + std::to_string(topk));
    }
  }
}

TEST(TreeVersions, EqualDistancesPreferTheSmallerIndexAcrossCells) {
  for (int n : {40, 400, 4000}) {
    std::mt19937 rng{static_cast<std::uint32_t>(n)};
    std::vector<float> references = make_points(Layout::uniform, n, 3, rng);
    const float centre = 4.f, a[3] = {1.f / 64, 1.f / 32, -1.f / 128};  // exact in float
    for (int t = 0; t < 3; ++t) {
      references[std::size_t(n - 1) * 3 + t] = centre + a[t];
      references[std::size_t(t)] = centre - a[t];
      references[3 + std::size_t(t)] = centre + (t == 1 ? a[t] : -a[t]);
    }
    std::vector<float> queries = {centre, centre, centre, centre, centre, centre};
    knn::Problem p;
    p.dim = 3;
    p.m = 2;
    p.n = n;
    p.topk = 2;
    p.queries = queries.data();
    p.references = references.data();
    for (const char* id : {"v10", "v12"}) {
      const Result r = run_version(id, p, 2);
      expect_matches_reference(p, r, id + std::to_string(n));
      EXPECT_EQ(r.indices[0], 0);
      EXPECT_EQ(r.indices[1], 1);
    }
  }
}

// ---------------------------------------------------------------- host tree invariants

TEST(KdTree, InvariantsHoldOnAwkwardInputs) {
  for (Layout layout : {Layout::uniform, Layout::grid, Layout::plane, Layout::identical, Layout::clustered, Layout::tiny}) {
    for (int dim : {1, 3, 7}) {
      for (int n : {1, 2, 3, 16, 17, 33, 1000, 5003}) {
        std::mt19937 rng(std::uint32_t(n * 31 + dim));
        const std::vector<float> points = make_points(layout, n, dim, rng);
        for (int leaf : {2, 16}) {
          const knn::tree::KdTree t = knn::tree::build_kdtree(points.data(), n, dim, leaf, 2);
          EXPECT_EQ(knn::tree::kdtree_check(t, points.data()), "")
              << name(layout) << " dim=" << dim << " n=" << n << " leaf=" << leaf;
          // Depth is the smallest with leaves of at most `leaf` points.
          EXPECT_LE((n + (1 << t.depth) - 1) >> t.depth, leaf);
          if (t.depth > 0) {
            EXPECT_GT((n + (1 << (t.depth - 1)) - 1) >> (t.depth - 1), leaf);
          }
        }
      }
    }
  }
}

TEST(KdTree, ParallelBuildIsDeterministic) {
  std::mt19937 rng(7);
  const int n = 50000, dim = 4;
  const std::vector<float> points = make_points(Layout::grid, n, dim, rng);
  const knn::tree::KdTree a = knn::tree::build_kdtree(points.data(), n, dim, 16, 1);
  const knn::tree::KdTree b = knn::tree::build_kdtree(points.data(), n, dim, 16, 2);
  EXPECT_EQ(a.index, b.index);
  EXPECT_EQ(a.split_dim, b.split_dim);
  EXPECT_EQ(a.split_value, b.split_value);
  EXPECT_EQ(a.box_lo, b.box_lo);
  EXPECT_EQ(a.box_hi, b.box_hi);
}

TEST(KdTree, RejectsBadSizes) {
  const float one[3] = {1.f, 2.f, 3.f};
  EXPECT_THROW(knn::tree::build_kdtree(one, 0, 3, 16, 1), std::invalid_argument);
  EXPECT_THROW(knn::tree::build_kdtree(one, 1, 3, 1, 1), std::invalid_argument);
}

TEST(Octree, InvariantsHoldOnAwkwardInputs) {
  for (Layout layout : {Layout::uniform, Layout::grid, Layout::plane, Layout::identical, Layout::clustered, Layout::tiny}) {
    for (int n : {1, 2, 9, 33, 1000, 20011}) {
      std::mt19937 rng(std::uint32_t(n * 17 + int(layout)));
      const std::vector<float> points = make_points(layout, n, 3, rng);
      for (int leaf : {1, 8, 32}) {
        const knn::tree::Octree t = knn::tree::build_octree(points.data(), n, leaf, 2);
        EXPECT_EQ(knn::tree::octree_check(t, points.data(), leaf), "") << name(layout) << " n=" << n << " leaf=" << leaf;
        EXPECT_LE(t.depth, knn::tree::kOctreeMaxDepth);
        if (layout == Layout::identical) {
          EXPECT_EQ(t.nodes.size(), 1u) << "identical points must stay one leaf";
        }
      }
    }
  }
}

// Points that collapse towards one spot geometrically would split forever without a guard.
TEST(Octree, DepthStaysBoundedOnGeometricClusters) {
  std::vector<float> points;
  for (int i = 0; i < 200; ++i)
    for (int t = 0; t < 3; ++t) points.push_back(std::ldexp(1.f, -i / 2) * (t == 0 ? 1.f : 0.5f));
  const int n = int(points.size() / 3);
  const knn::tree::Octree t = knn::tree::build_octree(points.data(), n, 1, 2);
  EXPECT_EQ(knn::tree::octree_check(t, points.data(), 1), "");
  EXPECT_LE(t.depth, knn::tree::kOctreeMaxDepth);
}

TEST(Octree, ParallelBuildIsDeterministic) {
  std::mt19937 rng(11);
  const int n = 60000;
  const std::vector<float> points = make_points(Layout::clustered, n, 3, rng);
  const knn::tree::Octree a = knn::tree::build_octree(points.data(), n, 32, 1);
  const knn::tree::Octree b = knn::tree::build_octree(points.data(), n, 32, 2);
  EXPECT_EQ(a.index, b.index);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].first, b.nodes[i].first);
    EXPECT_EQ(a.nodes[i].count, b.nodes[i].count);
  }
}

// ---------------------------------------------------------------- descriptors and skip reasons

TEST(TreeVersions, DescriptorsAndSkipReasons) {
  knn::Problem p;
  p.dim = 16;
  p.m = 1;
  p.n = 10;
  p.topk = 1;
  knn::Environment env;
  for (const char* id : {"v10", "v12"}) {
    const knn::VersionDesc* v = knn::Registry::instance().find(id);
    ASSERT_NE(v, nullptr) << id;
    EXPECT_EQ(v->family, knn::Family::tree);
    EXPECT_TRUE(v->has_build);
    EXPECT_EQ(v->gpus, knn::GpuNeed::none);
  }
  EXPECT_FALSE(knn::Registry::instance().find("v10")->supports(p, env).has_value());
  EXPECT_EQ(knn::Registry::instance().find("v12")->supports(p, env).value_or(""), "octree needs k = 3");
  p.dim = 3;
  EXPECT_FALSE(knn::Registry::instance().find("v12")->supports(p, env).has_value());

  // The GPU versions exist only in CUDA builds; their skip reasons need no device to check.
  const knn::VersionDesc* v11 = knn::Registry::instance().find("v11");
  const knn::VersionDesc* v13 = knn::Registry::instance().find("v13");
  if (v11 == nullptr || v13 == nullptr) {
    GTEST_SKIP() << "built without CUDA: v11 and v13 are not registered";
  }
  knn::Environment gpu_env;
  gpu_env.devices.emplace_back();
  gpu_env.devices.back().ordinal = 0;
  EXPECT_EQ(v11->gpus, knn::GpuNeed::one);
  EXPECT_EQ(v13->gpus, knn::GpuNeed::one);
  p.topk = 33;
  EXPECT_EQ(v11->supports(p, gpu_env).value_or(""), "GPU kd-tree supports topk ≤ 32");
  EXPECT_EQ(v13->supports(p, gpu_env).value_or(""), "GPU octree supports topk ≤ 32");
  p.topk = 32;
  EXPECT_FALSE(v11->supports(p, gpu_env).has_value());
  EXPECT_FALSE(v13->supports(p, gpu_env).has_value());
  p.dim = 4;
  EXPECT_EQ(v13->supports(p, gpu_env).value_or(""), "octree needs k = 3");
}

}  // namespace
