// Every registered version that needs a GPU, validated against v0 on the seed's cases 0–7 and on
// awkward sizes. Labelled `gpu` in ctest; skipped with a message where no CUDA device exists.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "devices.hpp"
#include "matrix.hpp"
#include "test_support.hpp"

using namespace knn;
using knn::testing::Dataset;

namespace {

struct GpuCase {
  std::string name;
  int dim, m, n, topk;
  Distribution dist;
};

void PrintTo(const GpuCase& c, std::ostream* os) { *os << c.name; }

const DeviceDiscovery& discovery() {
  static const DeviceDiscovery d = discover_devices();
  return d;
}

std::vector<GpuCase> gpu_cases() {
  std::vector<GpuCase> out;
  const auto mx = load_matrix(std::string(KNN_SOURCE_DIR) + "/configs/default.json");
  for (const auto& c : mx.cases)
    if (c.id <= 7) out.push_back({fmt::format("case{}", c.id), c.dim, c.m, c.n, c.topk, c.distribution});
  const std::vector<GpuCase> awkward = {
      {"m1", 3, 1, 5000, 1, Distribution::uniform},          {"n1", 3, 64, 1, 1, Distribution::uniform},
      {"n2", 3, 33, 2, 1, Distribution::uniform},            {"n3", 3, 33, 3, 1, Distribution::uniform},
      {"n5", 3, 33, 5, 1, Distribution::uniform},            {"n1025", 3, 100, 1025, 1, Distribution::uniform},
      {"n100003", 3, 20, 100003, 1, Distribution::uniform},  {"m1000", 3, 1000, 4000, 1, Distribution::uniform},
      {"k1", 1, 200, 3000, 1, Distribution::uniform},        {"k2", 2, 200, 3000, 1, Distribution::uniform},
      {"k7", 7, 200, 3000, 1, Distribution::uniform},        {"k16", 16, 200, 3000, 1, Distribution::uniform},
      {"k32", 32, 100, 3000, 1, Distribution::uniform},      {"duplicates", 3, 300, 5000, 1, Distribution::duplicates},
      {"duplicates_k16", 16, 100, 5000, 1, Distribution::duplicates}, {"clusters", 3, 300, 20000, 1, Distribution::clusters},
      {"clusters_k16", 16, 100, 20000, 1, Distribution::clusters},    {"topk5", 3, 200, 5000, 5, Distribution::uniform},
      {"topk32", 3, 100, 5000, 32, Distribution::clusters},  {"topk8_dups", 3, 100, 3000, 8, Distribution::duplicates},
  };
  out.insert(out.end(), awkward.begin(), awkward.end());
  return out;
}

class GpuVersions : public ::testing::TestWithParam<GpuCase> {};

TEST_P(GpuVersions, ValidateAgainstV0) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU tests skipped, not run";
  const auto& c = GetParam();
  Dataset d(c.dim, c.m, c.n, c.topk, c.dist, 777 + c.n + c.dim);
  Environment env;
  env.devices = disc.devices;
  int ran = 0;
  for (const auto& v : Registry::instance().versions()) {
    if (v.gpus == GpuNeed::none) continue;
    const Result r = knn::testing::run_once(v, d, env);
    if (r.status == Status::skip) {
      std::printf("  %s %s: skipped: %s\n", c.name.c_str(), v.id.c_str(), r.reason.c_str());
      continue;
    }
    ++ran;
    EXPECT_EQ(r.status, Status::pass) << v.id << " on " << c.name << ": " << r.reason;
    if (!r.path.empty()) std::printf("  %s %s: path: %s\n", c.name.c_str(), v.id.c_str(), r.path.c_str());
  }
  if (c.topk == 1) EXPECT_GT(ran, 0) << "no GPU version ran on " << c.name;
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuVersions, ::testing::ValuesIn(gpu_cases()),
                         [](const ::testing::TestParamInfo<GpuCase>& i) { return i.param.name; });

}  // namespace

namespace {

// A problem that claims 2^31−1 references of 64 floats (512 GiB) but owns only its one query: a
// version must refuse it before touching the references.
struct OversizedProblem {
  std::vector<float> query = std::vector<float>(64, 0.5f);
  Problem problem{64, 1, 2147483647, 1, query.data(), nullptr};
};

}  // namespace

TEST(GpuMemory, ACaseOverDeviceMemoryIsSkippedBeforeAllocating) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU memory test skipped, not run";
  OversizedProblem big;
  Environment env;
  env.devices = disc.devices;
  for (const auto& v : Registry::instance().versions()) {
    if (v.family != Family::gpu && v.family != Family::multi_gpu) continue;
    Result r;
    MeasureOptions o;
    o.warmup = 0;
    o.min_samples = o.max_samples = 1;
    Environment own = env;  // the version's parameters at their defaults, as the runner gives them
    own.params = ParamValues(v.id, v.params, {});
    measure_version(v, big.problem, own, o, nullptr, r);
    EXPECT_EQ(r.status, Status::skip) << v.id << ": " << r.reason;
    EXPECT_NE(r.reason.find("GiB"), std::string::npos) << v.id << ": " << r.reason;
    std::printf("  %s: %s\n", v.id.c_str(), r.reason.c_str());
  }
}

TEST(GpuMemory, AFailedAllocationIsRecordedAsASkip) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU memory test skipped, not run";
  const VersionDesc* v3 = Registry::instance().find("v3");
  ASSERT_NE(v3, nullptr);
  VersionDesc unchecked = *v3;
  unchecked.device_bytes = nullptr;  // no pre-check: cudaMalloc itself must fail and be caught
  OversizedProblem big;
  Environment env;
  env.devices = disc.devices;
  Result r;
  MeasureOptions o;
  o.warmup = 0;
  o.min_samples = o.max_samples = 1;
  measure_version(unchecked, big.problem, env, o, nullptr, r);
  EXPECT_EQ(r.status, Status::skip) << r.reason;
  EXPECT_NE(r.reason.find("out of device memory"), std::string::npos) << r.reason;
  // The device is still usable afterwards.
  Dataset d(3, 50, 1000, 1, Distribution::uniform, 5);
  EXPECT_EQ(knn::testing::run_once(*v3, d, env).status, Status::pass);
}

namespace {

// Runs knnbench-testbin with v4 and t8 (tests/versions/t8_v4_slowed.cu) on cases 2, 6 and 7 (wide
// and narrow blocks, k = 3 and 16) with --param t8.slowdown=`knob`; returns the exit code and the
// results file, and the output in `out`.
std::pair<int, nlohmann::json> run_v4_and_t8(const std::string& knob, std::string* out = nullptr) {
  const auto json = std::filesystem::temp_directory_path() / fmt::format("knn_t8_{}_{}.json", ::getpid(), knob);
  std::filesystem::remove(json);
  const auto run = knn::testing::run(KNN_TEST_BINARY, fmt::format("--config {}/configs/default.json --version v4,t8 --param 't8.slowdown={}' "
                                                                  "--case 2,6,7 --warmup 0 --min-samples 1 --min-time 0 --quiet --json {}",
                                                                  KNN_SOURCE_DIR, knob, json.string()));
  if (out) *out = run.out;
  nlohmann::json results;
  if (std::filesystem::exists(json)) results = nlohmann::json::parse(std::ifstream(json));
  return {run.code, results};
}

}  // namespace

// t8 does more of v4's work under t8.slowdown and must still give v4's answers at every setting.
TEST(GpuSlowedVersion, T8AnswersAsV4AtEverySlowdown) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  for (const std::string knob : {"0", "13", "100"}) {
    const auto [code, j] = run_v4_and_t8(knob);
    EXPECT_EQ(code, 0) << "t8.slowdown=" << knob;
    ASSERT_EQ(j["results"].size(), 6u) << "t8.slowdown=" << knob;
    for (const auto& r : j["results"]) {
      EXPECT_EQ(r["status"], "pass") << r["version"] << " t8.slowdown=" << knob << ": " << r["reason"];
      if (r["version"] == "t8") EXPECT_NE(r["path"].get<std::string>().find("(slowdown=" + knob + ")"), std::string::npos) << r["path"];
    }
  }
}

// A value outside 0..100 is a usage error of the whole run (exit 2, nothing measured), said by the
// parameter's declaration.
TEST(GpuSlowedVersion, T8RefusesAKnobOutsideItsRange) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  for (const std::string knob : {"ten", "101", "-1"}) {
    std::string out;
    const auto [code, j] = run_v4_and_t8(knob, &out);
    EXPECT_EQ(code, 2) << "t8.slowdown=" << knob << "\n" << out;
    EXPECT_TRUE(j.is_null()) << knob;
    EXPECT_NE(out.find("expected an integer in [0, 100]"), std::string::npos) << out;
  }
}
