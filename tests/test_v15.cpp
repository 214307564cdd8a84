// v15 (fused distance + top-k, chunked copy under the search) against v0's loop on the same
// problem: topk from 1 to 2048 (register lists, heaps, the atomicMin and the sorted merges),
// k compiled in and at run time, m = 1, 7 and 1024 (one thread's rows split across blocks, or
// many query groups), n = 1, 100 and 65537 (chunks, padding rows), self-joins, and integer data
// full of exact ties. GPU tests (GpuV15*) skip with a message where no CUDA device exists; the
// chunk and split planning (kernels/common/scan_plan.hpp) and supports() run on the CPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/order.hpp"
#include "core/registry.hpp"
#include "core/topk.hpp"
#include "data.hpp"
#include "devices.hpp"
#include "kernels/common/scan_plan.hpp"
#include "test_support.hpp"

using namespace knn;

namespace {

struct V15Case {
  int dim, m, n, topk;
  bool self_join;
  Distribution dist;
  std::uint32_t integer_max;
  int checked_rows;  // 0: every query; otherwise about this many, spread over the queries
  std::string name() const {
    return fmt::format("{}k{}_m{}_n{}_topk{}_{}{}", self_join ? "self_" : "", dim, m, n, topk, to_string(dist),
                       dist == Distribution::integers ? fmt::format("{}", integer_max) : std::string());
  }
};

void PrintTo(const V15Case& c, std::ostream* os) { *os << c.name(); }

const DeviceDiscovery& discovery() {
  static const DeviceDiscovery d = discover_devices();
  return d;
}

V15Case make(int dim, int m, int n, int topk, bool self_join = false, Distribution dist = Distribution::uniform,
             std::uint32_t integer_max = kDefaultIntegerMax, int checked_rows = 0) {
  return {dim, self_join ? n : m, n, topk, self_join, dist, integer_max, checked_rows};
}

std::vector<V15Case> v15_cases() {
  std::vector<V15Case> out;
  // Every list kind and both merges: few queries against many rows (partials merged), and a
  // self-join of integer points in [0, 4)^2, where most distances tie.
  for (int topk : {1, 2, 8, 31, 32, 33, 100, 256, 1024, 2048}) {
    out.push_back(make(3, 7, 65537, topk));
    out.push_back(make(2, 0, 2500, topk, true, Distribution::integers, 4));
  }
  for (int topk : {1, 8, 33, 256}) out.push_back(make(3, 1, 65537, topk, false, Distribution::duplicates));
  // Every dimension, compiled in or not, with many queries (written in place) and one query.
  for (int dim : {1, 2, 3, 5, 7, 16, 33, 128})
    for (int topk : {1, 8, 32, 33}) {
      out.push_back(make(dim, 1024, 100, topk, false, Distribution::clusters));
      out.push_back(make(dim, 1, 65537, topk, false, Distribution::integers, 10));
    }
  // n = 1 (a query with no candidate in a self-join: v0's (0, +inf) for topk 1), topk > n
  // (unfilled slots read (+inf, -1)), n not a multiple of the 4-row group.
  for (int m : {1, 7, 1024}) {
    out.push_back(make(3, m, 1, 1));
    out.push_back(make(3, m, 5, 8));
    out.push_back(make(4, m, 7, 2, false, Distribution::integers, 2));
  }
  out.push_back(make(3, 0, 1, 1, true));
  out.push_back(make(2, 0, 2, 1, true));
  out.push_back(make(2, 0, 3, 4, true));
  // Many queries against many rows, sampled rows: register lists, heaps, ties, k = 16 and 128.
  out.push_back(make(3, 1024, 65537, 1, false, Distribution::integers, 3, 97));
  out.push_back(make(16, 1024, 65537, 32, false, Distribution::uniform, kDefaultIntegerMax, 97));
  out.push_back(make(16, 1024, 65537, 1024, false, Distribution::uniform, kDefaultIntegerMax, 31));
  out.push_back(make(128, 1024, 65537, 100, false, Distribution::clusters, kDefaultIntegerMax, 31));
  out.push_back(make(5, 0, 65537, 5, true, Distribution::uniform, kDefaultIntegerMax, 97));
  out.push_back(make(7, 0, 20011, 33, true, Distribution::integers, 3, 97));
  return out;
}

struct Points {
  std::vector<float> queries, references;
  Problem problem;
  explicit Points(const V15Case& c) : references(std::size_t(c.n) * c.dim) {
    const std::uint64_t seed = 1500 + std::uint64_t(c.n) * 7 + std::uint64_t(c.dim) * 131 + std::uint64_t(c.topk);
    generate_points(c.dist, seed, PointSet::references, c.dim, std::size_t(c.n), references.data(), c.integer_max);
    if (!c.self_join) {
      queries.resize(std::size_t(c.m) * c.dim);
      generate_points(c.dist, seed, PointSet::queries, c.dim, std::size_t(c.m), queries.data(), c.integer_max);
    }
    problem = Problem{c.dim, c.m, c.n, c.topk, c.self_join ? references.data() : queries.data(), references.data(),
                      c.self_join};
  }
};

// v15 sums with fused multiply-adds; v0 rounds every product. Equal on integer data, otherwise
// within a few ulps.
bool near(float a, float b) {
  if (a == b) return true;
  return std::fabs(double(a) - double(b)) <= 1e-5 * std::max(std::fabs(double(a)), std::fabs(double(b))) + 1e-12;
}

// Runs v15 on the case and checks the rows against v0's loop: every slot's distance near v0's
// (equal on integer data), each index v0's or another one, listed once, not the query itself,
// whose v0 distance is near the one v0 has at that rank; rows in ascending order. Returns the path.
std::string check_against_v0(const V15Case& c) {
  const VersionDesc* v = Registry::instance().find("v15");
  EXPECT_NE(v, nullptr) << "v15 is not registered in a build that found a CUDA device";
  if (v == nullptr) return {};
  const Points pts(c);
  const Problem& p = pts.problem;
  Environment env;
  env.devices = {discovery().devices[0]};
  if (const auto reason = v->supports(p, env)) {
    ADD_FAILURE() << "v15 skipped " << c.name() << ": " << *reason;
    return {};
  }
  std::vector<int> rows;
  const int step = c.checked_rows > 0 ? std::max(1, p.m / c.checked_rows) : 1;
  for (int q = 0; q < p.m; q += step) rows.push_back(q);
  if (rows.back() != p.m - 1) rows.push_back(p.m - 1);

  std::vector<std::int32_t> want_i(p.result_slots(), -7), got_i(p.result_slots(), -7);
  std::vector<float> want_d(p.result_slots(), -1.f), got_d(p.result_slots(), -1.f);
  for (int q : rows) bruteforce_one_query(p, q, Neighbors{want_i.data(), want_d.data()});
  TimingSink timing;
  RunContext ctx{timing, env, {}, {}};
  v->make()->query(p, Neighbors{got_i.data(), got_d.data()}, ctx);
  for (const char* phase : {"h2d", "kernel", "merge", "d2h"}) EXPECT_EQ(timing.phases().count(phase), 1u) << phase;

  const bool exact = c.dist == Distribution::integers;
  for (int q : rows) {
    std::set<std::int32_t> seen;
    for (int s = 0; s < p.topk; ++s) {
      const std::size_t at = std::size_t(q) * p.topk + s;
      const std::int32_t gi = got_i[at], wi = want_i[at];
      const float gd = got_d[at], wd = want_d[at];
      const std::string where = fmt::format("{} query {} rank {} ({})", c.name(), q, s, ctx.path);
      if (std::isinf(wd)) {  // no candidate left: v0's empty slot
        EXPECT_TRUE(std::isinf(gd) && gi == wi) << where << ": (" << gi << ", " << gd << ") for (" << wi << ", inf)";
        if (!(std::isinf(gd) && gi == wi)) return ctx.path;
        continue;
      }
      const bool valid = gi >= 0 && gi < p.n && !(p.self_join && gi == q) && seen.insert(gi).second;
      EXPECT_TRUE(valid) << where << ": index " << gi << " out of range, the query itself or listed twice";
      if (!valid) return ctx.path;
      const float true_d = squared_distance(p.queries + std::size_t(q) * p.dim,
                                            p.references + std::size_t(gi) * p.dim, p.dim);
      const bool ok = exact ? gd == wd && true_d == wd && (gi == wi || true_d == wd)
                            : near(gd, wd) && near(true_d, wd) && near(gd, true_d);
      EXPECT_TRUE(ok) << where << ": (" << gi << ", " << gd << ") for v0's (" << wi << ", " << wd
                      << "), v0 distance of " << gi << " is " << true_d;
      if (!ok) return ctx.path;
      if (s > 0) {
        const float prev = got_d[at - 1];
        const bool ordered = prev < gd || (prev == gd && got_i[at - 1] < gi);
        EXPECT_TRUE(ordered) << where << ": after (" << got_i[at - 1] << ", " << prev << ")";
        if (!ordered) return ctx.path;
      }
    }
  }
  return ctx.path;
}

class GpuV15 : public ::testing::TestWithParam<V15Case> {};

TEST_P(GpuV15, MatchesV0) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const std::string path = check_against_v0(GetParam());
  EXPECT_FALSE(path.empty());
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuV15, ::testing::ValuesIn(v15_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });

// The path names the merge each shape takes: atomicMin for topk 1, a sort for split partial
// lists, nothing when each query has one list.
TEST(GpuV15Paths, MergeFollowsTheShape) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  EXPECT_NE(check_against_v0(make(3, 7, 65537, 1)).find("merged by atomicMin"), std::string::npos);
  EXPECT_NE(check_against_v0(make(3, 7, 65537, 8)).find("merged by a segmented sort"), std::string::npos);
  const std::string big = check_against_v0(make(2, 1 << 20, 300, 8, false, Distribution::uniform, 100, 50));
  EXPECT_NE(big.find("written in place"), std::string::npos) << big;
}

TEST(GpuV15Harness, PassesTheRunnersValidation) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const VersionDesc* v = Registry::instance().find("v15");
  ASSERT_NE(v, nullptr);
  knn::testing::Dataset d(3, 1000, 70001, 33, Distribution::duplicates, 15);
  Environment env;
  env.devices = {disc.devices[0]};
  const Result r = knn::testing::run_once(*v, d, env);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
}

TEST(V15Supports, SkipsWithReasons) {
  const VersionDesc* v = Registry::instance().find("v15");
  if (v == nullptr) GTEST_SKIP() << "v15 is built only with CUDA: not registered in this build";
  EXPECT_TRUE(v->self_join);
  EXPECT_EQ(v->family, Family::gpu);
  std::vector<float> points(3 * 3000, 0.5f);
  Problem p{3, 3000, 3000, 2048, points.data(), points.data()};
  Environment env;
  EXPECT_EQ(v->supports(p, env).value_or(""), "no CUDA device");
  DeviceInfo fake;
  fake.ordinal = 0;
  fake.sm_count = 132;
  env.devices = {fake};
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
  p.topk = 2049;
  EXPECT_NE(v->supports(p, env).value_or("").find("topk 2049 over v15's limit of 2048"), std::string::npos);
  p.topk = 5;
  p.self_join = true;
  p.m = 2999;
  EXPECT_NE(v->supports(p, env).value_or("").find("m == n"), std::string::npos);
  // What one call allocates grows with the answers it keeps.
  p.m = 3000;
  const std::size_t five = v->device_bytes(p, env);
  p.topk = 500;
  EXPECT_GT(v->device_bytes(p, env), five + 3000u * 495 * 8 - 1);
}

// The chunk boundaries: from 0 to n, increasing, interior ones on 4-row groups, at most
// kMaxChunks, each chunk at least kChunkBytes when there are several; one chunk when asked.
TEST(V15Plan, ChunksCoverTheRowsOnGroupBoundaries) {
  for (int n : {1, 2, 3, 4, 5, 100, 65537, 1 << 20, (1 << 24) + 3})
    for (int dim : {1, 3, 16, 128})
      for (bool single : {false, true}) {
        const std::vector<int> rows = gpu::plan_chunks(n, std::size_t(dim) * 4, single);
        const int chunks = int(rows.size()) - 1;
        const std::string where = fmt::format("n {} dim {} single {}", n, dim, single);
        ASSERT_GE(chunks, 1) << where;
        EXPECT_LE(chunks, single ? 1 : gpu::kMaxChunks) << where;
        EXPECT_EQ(rows.front(), 0) << where;
        EXPECT_EQ(rows.back(), n) << where;
        for (int c = 0; c < chunks; ++c) {
          EXPECT_LT(rows[c], rows[c + 1]) << where << " chunk " << c;
          if (c > 0) EXPECT_EQ(rows[c] % gpu::kScanGroup, 0) << where << " chunk " << c;
        }
        if (chunks > 1)
          EXPECT_GE(std::size_t(n) * dim * 4 / chunks + dim * 4 * gpu::kScanGroup, gpu::kChunkBytes) << where;
      }
  // 64 MiB of references (case 11) in the most chunks; 12 MiB (case 10) in three.
  EXPECT_EQ(gpu::plan_chunks(1 << 20, 64, false).size(), std::size_t(gpu::kMaxChunks) + 1);
  EXPECT_EQ(gpu::plan_chunks(1 << 20, 12, false).size(), 4u);
}

// The thread layout covers every query once, fills the device with splits when queries are few,
// and keeps the partial entries under the budget.
TEST(V15Plan, SplitsFollowTheDeviceAndTheQueries) {
  for (int m : {1, 2, 7, 100, 1024, 4099, 1 << 20})
    for (int q : {1, 2, 4})
      for (int topk : {1, 8, 32, 2048})
        for (long long resident : {1LL, 132LL * 16, 1000000LL}) {
          const gpu::ScanPlan p = gpu::plan_scan(m, 1 << 20, 3, topk, q, resident, false);
          const std::string where = fmt::format("m {} q {} topk {} resident {}", m, q, topk, resident);
          EXPECT_EQ(p.query_threads & (p.query_threads - 1), 0) << where;
          EXPECT_EQ(p.query_threads * p.ref_threads, gpu::kScanBlock) << where;
          EXPECT_GE((long long)p.query_groups * p.query_threads * q, m) << where;
          EXPECT_LT((long long)(p.query_groups - 1) * p.query_threads * q, m) << where;
          EXPECT_GE(p.splits, 1) << where;
          EXPECT_LE((long long)p.blocks_per_chunk(), resident + p.query_groups) << where;
          if (p.partials() > 1)
            EXPECT_LE((long long)m * p.partials() * topk, std::max(gpu::kPartialBudget, (long long)m * p.ref_threads * topk))
                << where;
        }
  // One query: every thread of a block along the rows, enough splits for the device.
  const gpu::ScanPlan one = gpu::plan_scan(1, 1 << 24, 3, 1, 4, 132 * 16, false);
  EXPECT_EQ(one.query_threads, 1);
  EXPECT_EQ(one.ref_threads, gpu::kScanBlock);
  EXPECT_GE(one.blocks_per_chunk(), 132);
  EXPECT_LE(one.blocks_per_chunk(), 132 * 16);
  // Case 10's shape: 1024 queries, 4 per thread: two query groups, the rest splits of the rows.
  const gpu::ScanPlan ten = gpu::plan_scan(1024, 1 << 20, 3, 1, 4, 132 * 16, false);
  EXPECT_EQ(ten.query_threads, gpu::kScanBlock);
  EXPECT_EQ(ten.query_groups, 2);
  EXPECT_EQ(ten.splits, 132 * 8);
  EXPECT_EQ(ten.chunks(), 3);
  // A device twice the size gets twice the splits.
  EXPECT_EQ(gpu::plan_scan(1024, 1 << 20, 3, 1, 4, 264 * 16, false).splits, 264 * 8);
  // Many queries and topk 32: one chunk and one list per query (no merge).
  const gpu::ScanPlan many = gpu::plan_scan(1 << 20, 1 << 20, 5, 32, 1, 132 * 16, false);
  EXPECT_EQ(many.partials(), 1);
}

}  // namespace
