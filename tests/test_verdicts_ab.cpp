// End to end on this machine: `knnbench ab` calls t7 with 20 % more of its own work SLOWER, and the
// same setting on both sides never SLOWER or FASTER. 24 processes per experiment, alternating
// A B B A ...; it runs alone (a Verdicts* test: RUN_SERIAL in tests/CMakeLists.txt), in about a
// minute on a 2-core machine. The cases are those of tests/test_verdicts.cpp whose v0 takes 1-2 ms
// there (3-D: a 16-D case came out only 3 % slower for 10 % more rows).
//
// Where the slowdown is not called SLOWER, the test tells the host from the tool: if the ratio's
// interval lies below 1.05 the tool missed a real 20 % (a failure); if the interval is wide because
// one side's processes spread by more than 1.3x (max/min, named in the message), 12 processes of this
// host cannot show 20 % and the test skips, saying so. The same-setting experiment has no such way out.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "ab_support.hpp"
#include "cli_support.hpp"
#include "experiment_support.hpp"

namespace {

constexpr const char* kMatrix = R"({"schema_version": 1, "defaults": {"topk": 1, "distribution": "uniform", "seed": 20240607},
 "cases": [{"id": 0, "k": 3, "m": 1, "n": 786432}, {"id": 1, "k": 3, "m": 4, "n": 196608}]})";

struct Experiment {
  int code = -1;
  std::string out;
  nlohmann::json report;
};

Experiment run_ab(const std::string& dir, const std::string& name, int a_pct, int b_pct) {
  const std::string json = dir + "/" + name + ".json";
  Experiment e;
  const auto r = knn::testing::run(KNN_TEST_BINARY, fmt::format("ab --a-param t7.slowdown={} --b-param t7.slowdown={} --version t7 --config "
                                                                "'{}/matrix.json' --warmup 5 --processes 12 --json '{}'",
                                                                a_pct, b_pct, dir, json));
  e.code = r.code;
  e.out = r.out;
  if (std::filesystem::exists(json)) e.report = nlohmann::json::parse(std::ifstream(json));
  return e;
}

using knn::testing::widest_spread;

}  // namespace

TEST(VerdictsAb, TwentyPercentMoreWorkIsSlowerAndTheSameSettingIsSame) {
  if (const auto busy = knn::testing::machine_busy()) GTEST_SKIP() << *busy;
  const auto dir = knn::testing::experiment_folder("knn_verdicts_ab", kMatrix);

  const Experiment same = run_ab(dir.string(), "same", 0, 0);
  ASSERT_EQ(same.report["rows"].size(), 2u) << same.out;
  for (const auto& row : same.report["rows"])
    EXPECT_EQ(row["verdict"], "SAME") << "t7 against itself, case " << row["case"] << "\n" << same.out;
  EXPECT_EQ(same.code, 0) << same.out;

  const Experiment slowed = run_ab(dir.string(), "slowed", 0, 20);
  ASSERT_EQ(slowed.report["rows"].size(), 2u) << slowed.out;
  std::vector<std::string> host_too_noisy;
  int judged = 0;
  for (const auto& row : slowed.report["rows"]) {
    if (row["a_median_ms"].get<double>() < 1.0) continue;  // the promise holds from 1 ms
    ++judged;
    if (row["verdict"] == "SLOWER") continue;
    const double high = row["interval"]["high"].is_number() ? row["interval"]["high"].get<double>() : 0;
    const auto [spread, where] = widest_spread(row);
    if (high >= 1.05 && spread > 1.3)
      host_too_noisy.push_back(fmt::format("case {}: {} (B/A interval up to {:.3f}; processes spread {:.2f}x: {})", row["case"].get<int>(),
                                           row["verdict"].get<std::string>(), high, spread, where));
    else
      ADD_FAILURE() << "20 % more work, case " << row["case"] << ": " << row["verdict"] << "\n" << slowed.out;
  }
  EXPECT_GE(judged, 1) << "no case of 1 ms or more on this machine: the test checks nothing\n" << slowed.out;
  if (!::testing::Test::HasFailure() && !host_too_noisy.empty())
    GTEST_SKIP() << "this host's processes spread too far for 12 per side to show 20 %:" << knn::testing::row_lines(host_too_noisy);
  if (!::testing::Test::HasFailure()) {
    EXPECT_EQ(slowed.code, 1) << slowed.out;
    std::filesystem::remove_all(dir);
  }
}
