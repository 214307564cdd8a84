// End to end on this machine: `knnbench ab` calls t7 with 20 % more of its own work SLOWER, and the
// same setting on both sides never SLOWER or FASTER. 24 processes per experiment, alternating
// A B B A ...; it runs alone (a Verdicts* test: RUN_SERIAL in tests/CMakeLists.txt), in about a
// minute on a 2-core machine. The cases are those of tests/test_verdicts.cpp whose v0 takes 1-2 ms
// there (3-D: a 16-D case came out only 3 % slower for 10 % more rows).
//
// Where the slowdown is not called SLOWER, the test tells the host from the tool: if the ratio's
// interval lies below 1.05 the tool missed a real 20 % (a failure); if the interval is wide because
// one side's processes spread by more than 1.3x (max/min, named in the message) or the tool withheld
// its verdict because the processes fell into modes, 12 processes of this host cannot show 20 %. An
// attempt that misses is repeated once; the repeat's misses of that kind skip the test, naming them,
// and any other miss fails. The same setting must be SAME (or withheld, never SLOWER or FASTER).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
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

using knn::testing::Attempt;
using knn::testing::widest_spread;

// One attempt of both experiments. Misses go to `wrong`, or to `withheld` where the tool withheld
// its verdict ("too few samples": the sides' processes fell into modes with too few in common) or,
// for the slowdown, one side's processes spread by more than 1.3x with the interval reaching 1.05.
Attempt run_attempt(const std::string& dir) {
  Attempt at;
  const Experiment same = run_ab(dir, "same", 0, 0);
  at.out = same.out;
  if (!same.report.contains("rows") || same.report["rows"].size() != 2u) {
    at.wrong.push_back("t7 against itself: not two rows in the report");
    return at;
  }
  for (const auto& row : same.report["rows"]) {
    const std::string verdict = row["verdict"].get<std::string>();
    if (verdict == "SAME") continue;
    const std::string what = fmt::format("t7 against itself, case {}: {}", row["case"].get<int>(), verdict);
    (verdict.rfind("too few", 0) == 0 ? at.withheld : at.wrong).push_back(what);
  }
  if (at.wrong.empty() && at.withheld.empty() && same.code != 0) at.wrong.push_back(fmt::format("t7 against itself: exit code {}", same.code));

  const Experiment slowed = run_ab(dir, "slowed", 0, 20);
  at.out += "\n" + slowed.out;
  if (!slowed.report.contains("rows") || slowed.report["rows"].size() != 2u) {
    at.wrong.push_back("20 % more work: not two rows in the report");
    return at;
  }
  int judged = 0;
  for (const auto& row : slowed.report["rows"]) {
    if (row["a_median_ms"].get<double>() < 1.0) continue;  // the promise holds from 1 ms
    ++judged;
    const std::string verdict = row["verdict"].get<std::string>();
    if (verdict == "SLOWER") continue;
    const double high = row["interval"]["high"].is_number() ? row["interval"]["high"].get<double>() : 0;
    const auto [spread, where] = widest_spread(row);
    const std::string what = fmt::format("20 % more work, case {}: {} (B/A interval up to {:.3f}; processes spread {:.2f}x: {})",
                                         row["case"].get<int>(), verdict, high, spread, where);
    const bool withheld = (high >= 1.05 && spread > 1.3) || (high >= 1.05 && verdict.rfind("too few", 0) == 0);
    (withheld ? at.withheld : at.wrong).push_back(what);
  }
  if (judged < 1) at.wrong.push_back("no case of 1 ms or more on this machine: the test checks nothing");
  if (at.wrong.empty() && at.withheld.empty() && slowed.code != 1) at.wrong.push_back(fmt::format("20 % more work: exit code {}", slowed.code));
  return at;
}

}  // namespace

// A shared 2-core machine sometimes changes speed for part of a minute: an attempt that misses is
// printed and repeated once. The repeat's wrong verdicts fail; if it only withheld verdicts or
// spread too far, the test skips, naming the rows.
TEST(VerdictsAb, TwentyPercentMoreWorkIsSlowerAndTheSameSettingIsSame) {
  if (const auto busy = knn::testing::machine_busy()) GTEST_SKIP() << *busy;
  const auto dir = knn::testing::experiment_folder("knn_verdicts_ab", kMatrix);
  const Attempt at = knn::testing::run_with_one_repeat([&] { return run_attempt(dir.string()); });
  for (const auto& w : at.wrong) ADD_FAILURE() << "attempt 2: " << w << "\n" << at.out;
  if (!::testing::Test::HasFailure() && !at.withheld.empty())
    GTEST_SKIP() << "attempt 1 missed, and in the repeat this host's processes spread too far or fell into modes for 12 per side to show 20 %:"
                 << knn::testing::row_lines(at.withheld);
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}
