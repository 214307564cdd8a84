// v14 (warp-shuffled reference tiles, top-k lists in shared memory) against v0's loop on the same
// problem: top-k sizes around the warp width, self-joins, n not a multiple of 32, identical points,
// integer data full of ties, k compiled in and k at run time. GPU tests (Gpu*) skip with a message
// where no CUDA device exists; the supports() test runs on the CPU with a made-up device.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "core/topk.hpp"
#include "data.hpp"
#include "devices.hpp"
#include "test_support.hpp"

using namespace knn;

namespace {

enum class Fill { generated, identical };

struct V14Case {
  std::string name;
  int dim, m, n, topk;
  bool self_join;
  Distribution dist;
  std::uint32_t integer_max;
  Fill fill;
};

void PrintTo(const V14Case& c, std::ostream* os) { *os << c.name; }

const DeviceDiscovery& discovery() {
  static const DeviceDiscovery d = discover_devices();
  return d;
}

V14Case make_case(int dim, int m, int n, int topk, bool self_join, Distribution dist = Distribution::uniform,
                  std::uint32_t integer_max = kDefaultIntegerMax, Fill fill = Fill::generated) {
  const std::string kind = fill == Fill::identical ? "identical" : to_string(dist);
  const std::string name = self_join ? fmt::format("self_k{}_n{}_topk{}_{}", dim, n, topk, kind)
                                     : fmt::format("k{}_m{}_n{}_topk{}_{}", dim, m, n, topk, kind);
  return {name, dim, self_join ? n : m, n, topk, self_join, dist, integer_max, fill};
}

std::vector<V14Case> v14_cases() {
  std::vector<V14Case> out;
  for (int topk : {1, 2, 5, 31, 32, 33, 64}) {
    out.push_back(make_case(2, 0, 1000, topk, true));
    out.push_back(make_case(3, 129, 1000, topk, false, Distribution::duplicates));
  }
  out.push_back(make_case(2, 0, 2, 1, true));
  for (int topk : {1, 5, 31, 32}) out.push_back(make_case(2, 0, 33, topk, true));
  for (int m : {1, 7, 100})
    for (int n : {1, 31, 32, 33, 1000, 4099}) {
      std::set<int> topks = {1, std::min(5, n), std::min(33, n)};
      for (int topk : topks) out.push_back(make_case(3, m, n, topk, false));
    }
  // Fewer candidates than topk: the unfilled slots must read (+inf, -1), as v0 leaves them.
  out.push_back(make_case(3, 7, 5, 8, false));
  // All points at one place: every distance is 0 and the row is the smallest indices (not the query).
  out.push_back(make_case(2, 0, 100, 32, true, Distribution::uniform, kDefaultIntegerMax, Fill::identical));
  out.push_back(make_case(3, 50, 77, 64, false, Distribution::uniform, kDefaultIntegerMax, Fill::identical));
  // Integer coordinates in [0, 4) or [0, 2): exact ties everywhere.
  out.push_back(make_case(3, 0, 1000, 33, true, Distribution::integers, 4));
  out.push_back(make_case(8, 0, 777, 5, true, Distribution::integers, 2));
  out.push_back(make_case(2, 300, 1000, 32, false, Distribution::integers, 3));
  // k compiled in (1, 2, 3, 4, 8) and at run time (5, 16, 33).
  for (int dim : {1, 2, 3, 4, 5, 8, 16, 33}) {
    out.push_back(make_case(dim, 0, 1000, 5, true, Distribution::integers, 10));
    out.push_back(make_case(dim, 129, 1000, 32, false, Distribution::clusters));
  }
  // Seed 002's small cities case (issue 17's case 201).
  out.push_back(make_case(2, 0, 8192, 32, true));
  return out;
}

// Owns a problem's points: a self-join's queries are its references (one array).
struct Points {
  std::vector<float> queries, references;
  Problem problem;
  explicit Points(const V14Case& c) : references(std::size_t(c.n) * c.dim) {
    const std::uint64_t seed = 1400 + std::uint64_t(c.n) * 31 + std::uint64_t(c.dim);
    if (c.fill == Fill::identical) {
      references.assign(references.size(), 0.375f);
      if (!c.self_join) queries.assign(std::size_t(c.m) * c.dim, 0.375f);
    } else {
      generate_points(c.dist, seed, PointSet::references, c.dim, std::size_t(c.n), references.data(), c.integer_max);
      if (!c.self_join) {
        queries.resize(std::size_t(c.m) * c.dim);
        generate_points(c.dist, seed, PointSet::queries, c.dim, std::size_t(c.m), queries.data(), c.integer_max);
      }
    }
    const float* q = c.self_join ? references.data() : queries.data();
    problem = Problem{c.dim, c.m, c.n, c.topk, q, references.data(), c.self_join};
  }
};

struct Answers {
  std::vector<std::int32_t> indices;
  std::vector<float> distances;
  explicit Answers(const Problem& p) : indices(p.result_slots(), -7), distances(p.result_slots(), -1.f) {}
  Neighbors view() { return Neighbors{indices.data(), distances.data()}; }
};

const VersionDesc* find_v14() { return Registry::instance().find("v14"); }

class GpuV14 : public ::testing::TestWithParam<V14Case> {};

TEST_P(GpuV14, MatchesV0) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const VersionDesc* v = find_v14();
  ASSERT_NE(v, nullptr) << "v14 is not registered in a build that found a CUDA device";
  const V14Case& c = GetParam();
  const Points pts(c);
  const Problem& p = pts.problem;
  Environment env;
  env.devices = {disc.devices[0]};
  if (const auto reason = v->supports(p, env)) FAIL() << "v14 skipped " << c.name << ": " << *reason;

  Answers want(p), got(p);
  for (int q = 0; q < p.m; ++q) bruteforce_one_query(p, q, want.view());
  TimingSink timing;
  RunContext ctx{timing, env, {}, {}};
  v->make()->query(p, got.view(), ctx);

  EXPECT_EQ(ctx.devices_used, std::vector<int>{disc.devices[0].ordinal});
  for (const char* phase : {"h2d", "kernel", "d2h"}) EXPECT_EQ(timing.phases().count(phase), 1u) << phase;
  for (int q = 0; q < p.m; ++q) {
    std::set<std::int32_t> seen;
    for (int s = 0; s < p.topk; ++s) {
      const std::size_t at = std::size_t(q) * p.topk + s;
      const std::int32_t gi = got.indices[at], wi = want.indices[at];
      const float gd = got.distances[at], wd = want.distances[at];
      // Distances are v0's float arithmetic bit for bit (+inf for an unfilled slot).
      ASSERT_EQ(gd, wd) << c.name << " query " << q << " rank " << s;
      if (gi == wi) continue;
      // The tie rule: another index at exactly the same true distance.
      ASSERT_GE(gi, 0) << c.name << " query " << q << " rank " << s << ": v0 has " << wi;
      ASSERT_LT(gi, p.n) << c.name << " query " << q << " rank " << s;
      ASSERT_FALSE(p.self_join && gi == q) << c.name << ": query " << q << " answered itself at rank " << s;
      ASSERT_TRUE(seen.insert(gi).second) << c.name << ": query " << q << " lists " << gi << " twice";
      EXPECT_EQ(squared_distance(p.queries + std::size_t(q) * p.dim, p.references + std::size_t(gi) * p.dim, p.dim), wd)
          << c.name << " query " << q << " rank " << s << ": index " << gi << " instead of " << wi;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuV14, ::testing::ValuesIn(v14_cases()),
                         [](const ::testing::TestParamInfo<V14Case>& i) { return i.param.name; });

// The same problem through the harness's own measurement and validation path.
TEST(GpuV14Harness, PassesTheRunnersValidation) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const VersionDesc* v = find_v14();
  ASSERT_NE(v, nullptr);
  knn::testing::Dataset d(3, 1000, 4099, 33, Distribution::duplicates, 14);
  Environment env;
  env.devices = {disc.devices[0]};
  const Result r = knn::testing::run_once(*v, d, env);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
}

// supports() reads the device's shared-memory limit: 128 threads × topk × 8 bytes per block.
TEST(V14Supports, SkipsTopkOverTheSharedMemoryLimitWithTheNumbers) {
  const VersionDesc* v = find_v14();
  if (v == nullptr) GTEST_SKIP() << "v14 is built only with CUDA: not registered in this build";
  std::vector<float> points(3 * 100, 0.5f);
  Problem p{3, 100, 100, 48, points.data(), points.data()};
  Environment env;
  EXPECT_EQ(v->supports(p, env).value_or(""), "no CUDA device");

  DeviceInfo fake;
  fake.ordinal = 0;
  fake.shared_per_block_optin = 48 * 1024;  // room for 48 slots per thread
  env.devices = {fake};
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
  p.topk = 49;
  const auto reason = v->supports(p, env);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("topk 49"), std::string::npos) << *reason;
  EXPECT_NE(reason->find("50176 bytes"), std::string::npos) << *reason;
  EXPECT_NE(reason->find("49152 bytes"), std::string::npos) << *reason;
  EXPECT_NE(reason->find("topk <= 48"), std::string::npos) << *reason;

  fake.shared_per_block_optin = 227 * 1024;  // an H100: topk up to 227
  env.devices = {fake};
  p.topk = 227;
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
  p.topk = 228;
  EXPECT_TRUE(v->supports(p, env).has_value());
}

TEST(V14Supports, AnswersSelfJoinsAndSaysWhatItAllocates) {
  const VersionDesc* v = find_v14();
  if (v == nullptr) GTEST_SKIP() << "v14 is built only with CUDA: not registered in this build";
  EXPECT_TRUE(v->self_join);
  EXPECT_EQ(v->family, Family::gpu);
  EXPECT_EQ(v->gpus, GpuNeed::one);
  ASSERT_TRUE(bool(v->device_bytes));
  std::vector<float> points(2 * 1000, 0.5f);
  Problem self{2, 1000, 1000, 32, points.data(), points.data(), true};
  Problem other = self;
  other.self_join = false;
  const Environment env;
  // Answers (indices + distances) plus the points: a self-join uploads its points once.
  EXPECT_EQ(v->device_bytes(self, env), 1000u * 2 * 4 + 1000u * 32 * 8);
  EXPECT_EQ(v->device_bytes(other, env), 2u * 1000 * 2 * 4 + 1000u * 32 * 8);
}

}  // namespace
