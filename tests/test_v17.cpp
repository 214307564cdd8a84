// v17 (R-tree kNN join on the GPU) against v0's loop, row for row: one point, identical points,
// M much smaller and much larger than N, K = 1 and K = N, k = 1, 2, 3, 5, 8, 16 and 20, clusters,
// integer data full of ties, self-joins, fan-outs 16, 23, 32 and 64 (v17.fanout); the GPU STR
// build against the host reference, byte for byte; the runner's own validation on the seed's
// headline shape; answers=direct (the join writes the rows into a pinned output) and answers=copy
// against v0 on awkward shapes. GPU tests (Gpu*) skip with a message where no CUDA device exists; the
// parameters' declarations, supports(), the answers' route and the direct rows' slot walk run on the CPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/order.hpp"
#include "core/registry.hpp"
#include "core/topk.hpp"
#include "data.hpp"
#include "devices.hpp"
#include "kernels/device/shared_topk.cuh"
#include "kernels/trees/rtree/str_pack.hpp"
#include "kernels/trees/rtree/v17_answers.hpp"
#include "kernels/trees/rtree/v17_params.hpp"
#include "test_support.hpp"
#if KNN_HAVE_CUDA
#include "kernels/trees/rtree/str_pack_gpu.hpp"
#endif

using namespace knn;

namespace {

const DeviceDiscovery& discovery() {
  static const DeviceDiscovery d = discover_devices();
  return d;
}

using V17Case = knn::testing::RowCase;

std::vector<V17Case> v17_cases() {
  std::vector<V17Case> out = {
      {"one_point", 3, 1, 1, 1},
      {"one_point_topk3", 3, 1, 1, 3},
      {"self_one_point", 3, 1, 1, 2, true},  // no neighbour exists: (+inf, -1) rows (topk 1: see below)
      {"identical", 3, 50, 77, 10, false, Distribution::uniform, kDefaultIntegerMax, true},
      {"self_identical", 2, 100, 100, 32, true, Distribution::uniform, kDefaultIntegerMax, true},
      {"m_small", 3, 3, 5000, 8},
      {"m_large", 3, 20000, 50, 4},
      {"topk1", 8, 2000, 3000, 1},
      {"topk_n", 3, 70, 40, 40},
      {"self_topk_n", 3, 40, 40, 40, true},
      {"topk_over_n", 3, 7, 5, 8},
      {"clusters", 3, 3000, 20000, 16, false, Distribution::clusters},
      {"clusters_k16", 16, 500, 20000, 5, false, Distribution::clusters},
      {"duplicates", 3, 1000, 5000, 8, false, Distribution::duplicates},
      {"ties_k3", 3, 1000, 1000, 33, false, Distribution::integers, 4},
      {"self_ties_k8", 8, 777, 777, 5, true, Distribution::integers, 2},
      {"seed300_shape", 8, 10000, 1000, 5, false, Distribution::integers, 100},
      {"seed301_shape", 8, 1000, 1000, 50, false, Distribution::integers, 100},
      {"self_uniform", 2, 8192, 8192, 32, true},
  };
  for (int dim : {1, 2, 3, 5, 8, 16, 20}) {
    out.push_back({fmt::format("k{}_uniform", dim), dim, 1000, 4000, 5});
    out.push_back({fmt::format("k{}_ties", dim), dim, 1000, 4000, 7, false, Distribution::integers, 10});
  }
  return out;
}

// Runs v17 on the case and checks every row against v0's loop: distances bit for bit and the same
// indices (the (distance, index) order is total, so ties resolve exactly as v0's). Returns ctx.path.
std::string check_against_v0(const V17Case& c, int fanout) {
  return knn::testing::check_rows_against_v0(
      "v17", c, 1700, discovery().devices[0],
      {{"h2d", 1}, {"build_p", 1}, {"build_q", c.self_join ? 0u : 1u}, {"join", 1}, {"d2h", 1}},
      {{"fanout", std::to_string(fanout)}});
}

class GpuV17 : public ::testing::TestWithParam<std::tuple<V17Case, int>> {};

TEST_P(GpuV17, MatchesV0RowForRow) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const auto& [c, fanout] = GetParam();
  const std::string path = check_against_v0(c, fanout);
  EXPECT_NE(path.find(fmt::format("fan-out {} (set by fanout)", fanout)), std::string::npos) << path;
  // answers=direct (the default) into pageable arrays: copied after the join instead, and said so.
  EXPECT_NE(path.find("answers=direct not taken: the output's indices and distances are not pinned"), std::string::npos) << path;
}

// answers=direct into pinned arrays (the join writes each leaf's rows into them) and answers=copy, at
// fan-outs 16, 32 and 64 (blocks of 32 and 64 threads): self-joins and plain joins, m not a multiple
// of the fan-out, fewer queries than one leaf, duplicates, integer ties, identical points, clusters,
// topk 1, 32 and 33 (a row not a whole number of warps).
std::vector<V17Case> answer_cases() {
  return {
      {"self_clusters_2d_topk32", 2, 5000, 5000, 32, true, Distribution::clusters},
      {"clusters_3d_topk32", 3, 3001, 7000, 32, false, Distribution::clusters},
      {"one_short_leaf", 3, 5, 2000, 32},
      {"self_duplicates_topk1", 3, 1999, 1999, 1, true, Distribution::duplicates},
      {"duplicates_topk32", 2, 1000, 3000, 32, false, Distribution::duplicates},
      {"self_ties_topk33", 8, 777, 777, 33, true, Distribution::integers, 4},
      {"topk1_uniform", 2, 4097, 3000, 1},
      {"self_identical_topk32", 3, 100, 100, 32, true, Distribution::uniform, kDefaultIntegerMax, true},
  };
}

class GpuV17Answers : public ::testing::TestWithParam<std::tuple<V17Case, std::string, int>> {};

TEST_P(GpuV17Answers, PinnedOutputMatchesV0RowForRow) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const auto& [c, answers, fanout] = GetParam();
  const bool direct = answers == "direct";
  const std::string path = knn::testing::check_rows_against_v0(
      "v17", c, 1717, disc.devices[0],
      {{"build_q", c.self_join ? 0u : 1u}, {"join", direct ? 0u : 1u}, {"d2h", direct ? 0u : 1u}, {"join_d2h", direct ? 1u : 0u}},
      {{"fanout", std::to_string(fanout)}, {"answers", answers}}, HostMemory::pinned);
  EXPECT_NE(path.find(direct ? "answers=direct: the copy overlaps the join" : "answers copied after the join (answers=copy)"),
            std::string::npos)
      << path;
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuV17Answers,
                         ::testing::Combine(::testing::ValuesIn(answer_cases()), ::testing::Values("direct", "copy"),
                                            ::testing::Values(16, 32, 64)),
                         [](const ::testing::TestParamInfo<std::tuple<V17Case, std::string, int>>& i) {
                           return fmt::format("{}_{}_f{}", std::get<0>(i.param).name, std::get<1>(i.param), std::get<2>(i.param));
                         });

INSTANTIATE_TEST_SUITE_P(Gpu, GpuV17, ::testing::Combine(::testing::ValuesIn(v17_cases()), ::testing::Values(16, 23, 32, 64)),
                         [](const ::testing::TestParamInfo<std::tuple<V17Case, int>>& i) {
                           return fmt::format("{}_f{}", std::get<0>(i.param).name, std::get<1>(i.param));
                         });

// A self-join of one point has no neighbour. v17 leaves the empty slot (+inf, -1) at every topk, as
// v0 does for topk > 1; v0's literal argmin loop for topk = 1 reports index 0 there instead, so this
// row is checked against the empty slot, not against v0.
TEST(GpuV17Empty, SelfJoinOfOnePointHasNoNeighbour) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const VersionDesc* v = Registry::instance().find("v17");
  ASSERT_NE(v, nullptr);
  std::vector<float> point = {0.25f, 0.5f, 0.75f};
  const Problem p{3, 1, 1, 1, point.data(), point.data(), true};
  Environment env;
  env.devices = {disc.devices[0]};
  env.params = knn::testing::params_for("v17");
  std::int32_t index = 7;
  float distance = -1.f;
  TimingSink timing;
  RunContext ctx{timing, env, {}, {}};
  v->make()->query(p, Neighbors{&index, &distance}, ctx);
  EXPECT_EQ(index, -1);
  EXPECT_EQ(distance, std::numeric_limits<float>::infinity());
}

#if KNN_HAVE_CUDA
// The GPU packing is the host reference's tree, array for array (same stable key sorts).
TEST(GpuV17Str, DeviceBuildEqualsHostBuild) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  struct Shape {
    std::int64_t n;
    int dim, fanout;
    Distribution dist;
    std::uint32_t integer_max;
  };
  const std::vector<Shape> shapes = {
      {1, 3, 32, Distribution::uniform, 100},      {31, 2, 16, Distribution::uniform, 100},
      {1000, 8, 32, Distribution::integers, 100},  {10000, 8, 32, Distribution::integers, 100},
      {4097, 3, 23, Distribution::duplicates, 100}, {70000, 2, 16, Distribution::uniform, 100},
      {20000, 16, 64, Distribution::clusters, 100}, {50000, 5, 32, Distribution::integers, 3},
      {3000, 1, 16, Distribution::integers, 10},
  };
  for (const auto& s : shapes) {
    std::vector<float> pts(std::size_t(s.n) * s.dim);
    generate_points(s.dist, 1717 + s.n, PointSet::references, s.dim, std::size_t(s.n), pts.data(), s.integer_max);
    const str::Tree host = str::build_host(pts.data(), s.n, s.dim, s.fanout);
    const str::Tree dev = str::build_on_device(pts.data(), s.n, s.dim, s.fanout);
    const std::string name = fmt::format("n{}_k{}_f{}_{}", s.n, s.dim, s.fanout, to_string(s.dist));
    EXPECT_EQ(dev.shape.level_begin, host.shape.level_begin) << name;
    EXPECT_EQ(dev.index, host.index) << name;
    EXPECT_EQ(dev.points, host.points) << name;
    EXPECT_EQ(dev.lo, host.lo) << name;
    EXPECT_EQ(dev.hi, host.hi) << name;
    EXPECT_EQ(dev.begin, host.begin) << name;
    EXPECT_EQ(dev.end, host.end) << name;
  }
}
#endif

// v17 once through the runner's own measurement and validation, its answers in `memory` (the
// runner's answer arrays live where the run's inputs do).
Result run_in_runner(const knn::testing::Dataset& d, HostMemory memory) {
  const VersionDesc* v = Registry::instance().find("v17");
  EXPECT_NE(v, nullptr) << "v17 is not registered in a build that found a CUDA device";
  if (v == nullptr) return {};
  Environment env;
  env.devices = {discovery().devices[0]};
  env.host_memory = memory;
  return knn::testing::run_once(*v, d, env);
}

// The seed's headline shape.
TEST(GpuV17Harness, PassesTheRunnersValidation) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const Result r = run_in_runner(knn::testing::Dataset(8, 10000, 1000, 5, Distribution::integers, 300), HostMemory::pageable);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
}

// Case 200's shape scaled down (a 2-D self-join, topk 32) in pinned memory, as the benchmark runs:
// the answers written by the join pass the runner's validation.
TEST(GpuV17Harness, DirectAnswersIntoThePinnedOutputPassTheRunnersValidation) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  knn::testing::Dataset d(2, 20011, 20011, 32, Distribution::clusters, 200);
  d.problem = Problem{2, 20011, 20011, 32, d.references.data(), d.references.data(), true};
  const Result r = run_in_runner(d, HostMemory::pinned);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_EQ(r.phase_samples_ms.count("join_d2h"), 1u);
  EXPECT_EQ(r.phase_samples_ms.count("d2h"), 0u);
}

// SharedTopK::offer (any index order, as a tree visits rows), run on the host: streams of shuffled
// indices at few distinct distances, NaN and +inf among them, against sorting the whole stream in
// knn::before order; unfilled slots read (+inf, -1).
TEST(V17SharedTopK, OfferKeepsTheBestTopkWhateverTheIndexOrder) {
  std::mt19937 rng(1702);
  for (int topk : {1, 2, 3, 5, 32, 50}) {
    for (int len : {0, 1, topk - 1, topk, topk + 1, 10 * topk + 3, 600}) {
      if (len < 0) continue;
      std::vector<float> dist(std::size_t(topk) * 2, -5.f);
      std::vector<std::int32_t> idx(std::size_t(topk) * 2, -5);
      knn::gpu::SharedTopK list(dist.data() + 1, idx.data() + 1, 2, topk);
      list.clear();
      std::vector<std::int32_t> order(static_cast<std::size_t>(len));
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<std::pair<float, std::int32_t>> kept;
      std::uniform_int_distribution<int> level(0, 9);
      for (std::int32_t i : order) {
        const int l = level(rng);
        const float d = l == 8 ? std::numeric_limits<float>::quiet_NaN()
                               : (l == 9 ? std::numeric_limits<float>::infinity() : float(l) * 0.5f);
        list.offer(d, i);
        if (d == d && d != std::numeric_limits<float>::infinity()) kept.emplace_back(d, i);
      }
      std::sort(kept.begin(), kept.end(),
                [](const auto& a, const auto& b) { return before(a.first, a.second, b.first, b.second); });
      std::vector<std::int32_t> got_i(topk);
      std::vector<float> got_d(topk);
      list.store(got_i.data(), got_d.data());
      for (int s = 0; s < topk; ++s) {
        const bool filled = s < int(kept.size());
        EXPECT_EQ(got_d[s], filled ? kept[s].first : std::numeric_limits<float>::infinity())
            << "topk " << topk << " length " << len << " rank " << s;
        EXPECT_EQ(got_i[s], filled ? kept[s].second : -1) << "topk " << topk << " length " << len << " rank " << s;
      }
      for (int s = 0; s < topk; ++s) EXPECT_EQ(idx[std::size_t(s) * 2], -5) << "the other thread's slot " << s;
    }
  }
}

// The answers' route: copy when asked; direct only when both output arrays have device addresses,
// else copied with the arrays named; the parameter takes direct (the default) or copy only.
TEST(V17Answers, RouteAndParameter) {
  using knn::gpu::v17::route_answers;
  for (bool i : {false, true})
    for (bool d : {false, true}) {
      const auto copy = route_answers("copy", i, d);
      EXPECT_FALSE(copy.direct);
      EXPECT_EQ(copy.text, "answers copied after the join (answers=copy)");
      const auto direct = route_answers("direct", i, d);
      EXPECT_EQ(direct.direct, i && d) << i << d;
      if (i && d) continue;
      const std::string which = !i && !d ? "indices and distances" : (!i ? "indices" : "distances");
      EXPECT_NE(direct.text.find("answers=direct not taken: the output's " + which + " are not pinned"), std::string::npos)
          << direct.text;
    }
  EXPECT_EQ(ParamValues("v17", knn::gpu::v17_params(), {}).text("answers"), "direct");
  EXPECT_EQ(ParamValues("v17", knn::gpu::v17_params(), {{"answers", "copy"}}).text("answers"), "copy");
  for (const char* bad : {"", "1", "2", "Direct", "chunks", "copy "})
    EXPECT_THROW(ParamValues("v17", knn::gpu::v17_params(), {{"answers", bad}}), ParamError) << bad;
}

// The direct rows' slot walk over real packed trees: the threads of each leaf's block (the fan-out
// rounded up to warps, thread t taking slots t, t + threads, ...) write every slot of the m × topk
// output exactly once, consecutive threads on consecutive slots of one row.
TEST(V17Answers, LeafSlotWalkWritesEverySlotOnce) {
  for (std::int64_t m : {1, 5, 31, 33, 1000, 4097})
    for (int fanout : {16, 23, 32, 64})
      for (int topk : {1, 5, 32, 33}) {
        std::vector<float> pts(std::size_t(m) * 2);
        generate_points(Distribution::duplicates, 4800 + m, PointSet::queries, 2, std::size_t(m), pts.data());
        const str::Tree t = str::build_host(pts.data(), m, 2, fanout);
        const int threads = (fanout + 31) / 32 * 32;
        std::vector<int> written(std::size_t(m) * topk, 0);
        for (std::int64_t leaf = 0; leaf < t.shape.leaves(); ++leaf) {
          const int first = t.begin[leaf], slots = (t.end[leaf] - first) * topk;
          for (int th = 0; th < threads; ++th)
            for (int e = th; e < slots; e += threads) {
              const std::size_t at = knn::gpu::v17::leaf_slot(t.index.data(), first, e, topk);
              ASSERT_LT(at, written.size());
              ++written[at];
              if (e % topk > 0) EXPECT_EQ(at, knn::gpu::v17::leaf_slot(t.index.data(), first, e - 1, topk) + 1);
            }
        }
        const std::string name = fmt::format("m {} fan-out {} topk {}", m, fanout, topk);
        EXPECT_EQ(std::count(written.begin(), written.end(), 1), std::ptrdiff_t(written.size())) << name;
      }
}

TEST(V17Supports, FanoutParameterAndSharedMemoryLimit) {
  // Fan-outs outside [16, 64] never reach the version (the declaration refuses them); checked in
  // builds without CUDA too.
  for (const char* bad : {"15", "65", "x", "32 ", "0"})
    EXPECT_THROW(ParamValues("v17", knn::gpu::v17_params(), {{"fanout", bad}}), ParamError) << bad;
  const VersionDesc* v = Registry::instance().find("v17");
  if (v == nullptr) GTEST_SKIP() << "v17 is built only with CUDA: not registered in this build";
  EXPECT_TRUE(v->self_join);
  EXPECT_EQ(v->family, Family::gpu);
  std::vector<float> points(3 * 100, 0.5f);
  Problem p{3, 100, 100, 5, points.data(), points.data()};
  Environment env;
  env.params = knn::testing::params_for("v17", {{"fanout", "32"}});
  EXPECT_EQ(v->supports(p, env).value_or(""), "no CUDA device");
  DeviceInfo fake;
  fake.ordinal = 0;
  fake.shared_per_block_optin = 48 * 1024;
  env.devices = {fake};
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
  p.topk = 100;  // 32 heaps of 100 pairs: 25600 bytes and a few KiB more
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
  p.topk = 200;  // 51200 bytes: over 48 KiB
  const auto reason = v->supports(p, env);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("topk 200"), std::string::npos) << *reason;
  EXPECT_NE(reason->find("49152 bytes"), std::string::npos) << *reason;
  p.m = 0;
  EXPECT_NE(v->supports(p, env).value_or("").find("at least one point"), std::string::npos);
}

}  // namespace
