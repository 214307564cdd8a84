#include <gtest/gtest.h>

#include <set>

#include "core/errors.hpp"
#include "core/topk.hpp"
#include "test_support.hpp"

using namespace knn;
using knn::testing::Dataset;

TEST(Registry, VersionsAreUniqueSortedAndDescribed) {
  const auto& vs = Registry::instance().versions();
  ASSERT_FALSE(vs.empty());
  EXPECT_EQ(vs.front().id, "v0");
  std::set<std::string> ids;
  const std::string* last = nullptr;
  for (const auto& v : vs) {
    EXPECT_TRUE(ids.insert(v.id).second) << v.id;
    if (last != nullptr) EXPECT_FALSE(version_less(v.id, *last)) << *last << " before " << v.id;
    last = &v.id;
    EXPECT_FALSE(v.title.empty()) << v.id;
    EXPECT_TRUE(bool(v.make)) << v.id;
    if (v.family == Family::gpu || v.family == Family::multi_gpu) EXPECT_NE(v.gpus, GpuNeed::none) << v.id;
  }
}

TEST(Registry, DuplicateRegistrationIsRefused) {
  VersionDesc d;
  d.id = "v0";
  d.title = "again";
  d.make = [] { return std::unique_ptr<VersionInstance>(); };
  EXPECT_THROW(Registry::instance().add(d), std::logic_error);
}

TEST(Registry, SelectVersionsByListAndRejectsUnknown) {
  const auto sel = select_versions({"v0"});
  ASSERT_EQ(sel.size(), 1u);
  EXPECT_EQ(sel[0]->id, "v0");
  EXPECT_EQ(select_versions({}).size(), Registry::instance().versions().size());
  EXPECT_THROW(select_versions({"v0,v404"}), ConfigError);
}

TEST(Registry, SelectCasesByIdRangeAndGroup) {
  const auto mx = load_matrix(std::string(KNN_SOURCE_DIR) + "/configs/default.json");
  EXPECT_EQ(select_cases(mx, {"8-11"}, {}).size(), 4u);
  EXPECT_EQ(select_cases(mx, {"0,3", "5"}, {}).size(), 3u);
  EXPECT_EQ(select_cases(mx, {}, {"ta"}).size(), 8u);
  EXPECT_EQ(select_cases(mx, {}, {"large"}).size(), 4u);
  EXPECT_EQ(select_cases(mx, {}, {}).size(), 12u);
  EXPECT_THROW(select_cases(mx, {"12"}, {}), ConfigError);
  EXPECT_THROW(select_cases(mx, {"5-3"}, {}), ConfigError);
}

namespace {
int calls = 0;
void counting_query(const Problem& p, Neighbors out, RunContext& ctx) {
  ++calls;
  ctx.path = "counted";
  for (int q = 0; q < p.m; ++q) bruteforce_one_query(p, q, out);
}
}  // namespace

TEST(Runner, SkipReasonsAreRecordedAndNothingRuns) {
  Dataset d(3, 4, 50, 1, Distribution::uniform, 3);
  VersionDesc v;
  v.id = "v900";
  v.title = "test";
  v.make = query_only(counting_query);
  v.supports = [](const Problem&, const Environment&) -> std::optional<std::string> { return std::string("needs something else"); };
  calls = 0;
  Environment env;
  auto r = knn::testing::run_once(v, d, env);
  EXPECT_EQ(r.status, Status::skip);
  EXPECT_EQ(r.reason, "needs something else");
  EXPECT_EQ(calls, 0);

  v.supports = nullptr;
  v.gpus = GpuNeed::one;
  r = knn::testing::run_once(v, d, env);  // env has no devices
  EXPECT_EQ(r.status, Status::skip);
  EXPECT_EQ(r.reason, "no CUDA device");
  EXPECT_EQ(calls, 0);
}

TEST(Runner, SamplingRespectsMinSamplesAndRecordsPath) {
  Dataset d(3, 4, 50, 1, Distribution::uniform, 4);
  VersionDesc v;
  v.id = "v901";
  v.title = "test";
  v.make = query_only(counting_query);
  calls = 0;
  Environment env;
  MeasureOptions o;
  o.warmup = 2;
  o.min_samples = 7;
  o.max_samples = 7;
  o.min_time_s = 0;
  const Reference ref = compute_reference(d.problem, 0);
  Result r;
  MeasureRecord rec;
  measure_version(v, d.problem, env, o, &ref, r, &rec);
  EXPECT_EQ(r.status, Status::pass);
  // 2 warm-up calls, batches only timed to size the batch of these short calls, 7 samples
  EXPECT_EQ(calls, 2 + rec.calibration_calls + 7 * rec.calls_per_sample);
  EXPECT_EQ(r.stats.samples, 7);
  EXPECT_EQ(r.samples_ms.size(), 7u);
  EXPECT_EQ(r.phase_samples_ms["query"].size(), 7u);
  EXPECT_EQ(r.path, "counted");
  EXPECT_LE(r.stats.min, r.stats.median);
  EXPECT_LE(r.stats.median, r.stats.max);
}

TEST(Runner, AThrowingVersionFailsWithItsMessage) {
  Dataset d(3, 4, 50, 1, Distribution::uniform, 5);
  VersionDesc v;
  v.id = "v902";
  v.title = "test";
  v.make = query_only([](const Problem&, Neighbors, RunContext&) { throw std::runtime_error("kaboom"); });
  Environment env;
  const auto r = knn::testing::run_once(v, d, env);
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.reason.find("kaboom"), std::string::npos);
}

TEST(Stats, SummaryOfKnownSamples) {
  const auto s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.samples, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.stdev, 1.2909944487, 1e-9);
  EXPECT_NEAR(s.noise_pct, 51.639777949, 1e-6);
}

TEST(Registry, SelectDevicesByListRangeAndAll) {
  std::vector<DeviceInfo> all(4);
  for (int i = 0; i < 4; ++i) all[i].ordinal = i;
  EXPECT_EQ(select_devices(all, "all", "").size(), 4u);
  const auto two = select_devices(all, "2,0", "");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].ordinal, 2);
  EXPECT_EQ(select_devices(all, "1-3", "").size(), 3u);
  EXPECT_EQ(select_devices(all, "0,0-1", "").size(), 2u);  // no device twice
  EXPECT_THROW(select_devices(all, "4", ""), ConfigError);
  EXPECT_THROW(select_devices(all, "3-1", ""), ConfigError);
  // No device at all: nothing selected (the GPU versions skip with the reason), syntax still checked.
  EXPECT_TRUE(select_devices({}, "0,1", "no CUDA device").empty());
  EXPECT_THROW(select_devices({}, "0,x", "no CUDA device"), ConfigError);
}
