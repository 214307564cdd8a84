// `knnbench ab`: the statistics on synthetic per-process medians (modes, the ratio's interval, the
// verdicts; fixed seeds), and the command's bad inputs through knnbench-testbin. The experiment on
// this machine (t7 slowed against itself) is tests/test_verdicts_ab.cpp, run alone.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ab.hpp"
#include "stats.hpp"
#include "cli_support.hpp"

using knn::AbSide;
using knn::Verdict;

namespace {

// n per-process medians around `level` ms, log-normal with relative spread `sd`.
std::vector<double> draw(std::mt19937_64& rng, int n, double level, double sd) {
  std::normal_distribution<double> z(0, sd);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(level * std::exp(z(rng)));
  return v;
}

std::vector<double> concat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

AbSide side(std::vector<double> medians) {
  AbSide s;
  s.medians_ms = std::move(medians);
  for (std::size_t i = 0; i < s.medians_ms.size(); ++i) s.rounds.push_back(int(i) + 1);
  return s;
}

Verdict verdict(const std::vector<double>& a, const std::vector<double>& b) { return knn::judge_ab(side(a), side(b), {}).verdict; }

}  // namespace

// The two processes of the issue that motivated ab (an H100 machine's host, 8 processes each):
// v0 case 8 and case 6 have a slow mode; the GPU-bound v2 case 8 and v10 case 6 (one slow process) do not.
TEST(AbStats, ModesOfMeasuredProcesses) {
  const auto c8 = knn::find_modes({48.9, 52.1, 76.5, 51.3, 85.2, 49.7, 48.5, 49.4}, 5);
  ASSERT_EQ(c8.size(), 2u);
  EXPECT_EQ(c8[0].members.size(), 6u);
  EXPECT_EQ(c8[1].members.size(), 2u);
  EXPECT_NEAR(c8[0].median_ms, 49.55, 1e-9);
  EXPECT_NEAR(c8[1].median_ms, 80.85, 1e-9);
  EXPECT_EQ(c8[1].members, (std::vector<int>{2, 4}));  // the third and fifth processes
  const auto c6 = knn::find_modes({187, 187, 327, 180, 264, 279, 167, 188}, 5);
  ASSERT_EQ(c6.size(), 2u);
  EXPECT_EQ(c6[0].members.size(), 5u);
  EXPECT_EQ(c6[1].members.size(), 3u);
  EXPECT_EQ(knn::find_modes({4.29, 4.34, 4.26, 4.28, 4.27, 4.26, 4.51, 4.27}, 5).size(), 1u);
  EXPECT_EQ(knn::find_modes({1.70, 1.69, 3.04, 1.82, 1.76, 1.67, 1.95, 2.04}, 5).size(), 1u);  // one slow process is no mode
  EXPECT_EQ(knn::find_modes({2, 2, 2, 2, 2, 2}, 5).size(), 1u);
  EXPECT_EQ(knn::find_modes({1, 1, 2, 2}, 5).size(), 2u);   // two processes each: the smallest modes
  EXPECT_EQ(knn::find_modes({1, 1, 1, 2}, 5).size(), 1u);   // one process alone is not a mode
  EXPECT_EQ(knn::find_modes({1, 1, 1.04, 1.04}, 5).size(), 1u);  // levels 4 % apart: under the minimum effect
}

TEST(AbStats, BimodalSidesAreSplitWithTheirCounts) {
  std::mt19937_64 rng(45);
  for (int trial = 0; trial < 500; ++trial) {
    const int slow = 2 + trial % 5;  // 2 .. 6 of 10 processes slow
    const auto v = concat(draw(rng, 10 - slow, 50, 0.03), draw(rng, slow, 80, 0.03));
    const auto modes = knn::find_modes(v, 5);
    ASSERT_EQ(modes.size(), 2u) << trial;
    EXPECT_EQ(int(modes[1].members.size()), slow);
    for (int i : modes[1].members) EXPECT_GE(i, 10 - slow);  // the slow ones drawn last
  }
}

// A unimodal side is split rarely: at most 1 % of draws of 12 log-normal processes (simulated:
// 0.4 %), none of draws of a steady side (1 % spread).
TEST(AbStats, UnimodalSidesAreRarelySplit) {
  std::mt19937_64 rng(7);
  int split = 0, split_steady = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    split += knn::find_modes(draw(rng, 12, 10, 0.05), 5).size() > 1;
    split_steady += knn::find_modes(draw(rng, 12, 10, 0.01), 5).size() > 1;
  }
  EXPECT_LE(split, 20);
  EXPECT_EQ(split_steady, 0);
}

// The exact null distribution of U: 4 against 4 has P(U ≤ 0) = 1/70, P(U ≤ 1) = 2/70, P(U ≤ 2) =
// 4/70, so a 90 % interval cuts k = 2 from each end and guarantees 1 − 4/70.
TEST(AbStats, IntervalRankIsExactForSmallCounts) {
  const auto i = knn::shift_interval({1, 2, 3, 4}, {1.5, 2.5, 3.5, 4.5}, 0.90);
  EXPECT_NEAR(i.coverage, 1 - 4.0 / 70, 1e-12);
  // The 16 differences b − a are −2.5 .. 3.5 by 1; the second from each end: −1.5 and 2.5.
  EXPECT_DOUBLE_EQ(i.low, -1.5);
  EXPECT_DOUBLE_EQ(i.high, 2.5);
  EXPECT_DOUBLE_EQ(i.estimate, 0.5);
  // Too few for 99 %: [min, max], which says so by its coverage.
  const auto tiny = knn::shift_interval({1, 2}, {3, 4}, 0.99);
  EXPECT_LT(tiny.coverage, 0.99);
  EXPECT_DOUBLE_EQ(tiny.low, 1);
  EXPECT_DOUBLE_EQ(tiny.high, 3);
}

// The interval of the ratio holds the true ratio at its nominal rate: 2000 synthetic experiments per
// shape (B = 1.2 × A, log-normal processes; fixed seeds), exact and normal-approximated counts. The
// fraction covered is within 4 standard errors of the coverage the interval claims, which is at least
// the level asked.
TEST(AbStats, RatioIntervalCoversTheTruthAtItsNominalRate) {
  for (const auto& [na, nb, level] : {std::tuple{8, 8, 0.95}, std::tuple{12, 9, 0.99}, std::tuple{60, 50, 0.95}}) {
    std::mt19937_64 rng(1000 + na);
    const double truth = std::log(1.2);
    int covered = 0;
    double claimed = 0;
    const int trials = 2000;
    for (int t = 0; t < trials; ++t) {
      std::vector<double> a, b;
      for (double x : draw(rng, na, 10, 0.1)) a.push_back(std::log(x));
      for (double x : draw(rng, nb, 12, 0.1)) b.push_back(std::log(x));
      const auto i = knn::shift_interval(a, b, level);
      covered += i.low <= truth && truth <= i.high;
      claimed = i.coverage;
    }
    EXPECT_GE(claimed, level - 0.005) << na << " against " << nb;  // the normal approximation may miss by a little
    const double rate = double(covered) / trials, se = std::sqrt(claimed * (1 - claimed) / trials);
    EXPECT_NEAR(rate, claimed, 4 * se) << na << " against " << nb << " at " << level;
  }
}

TEST(AbStats, VerdictsOnSyntheticSides) {
  std::mt19937_64 rng(11);
  int false_alarms = 0;
  for (int t = 0; t < 300; ++t) false_alarms += verdict(draw(rng, 8, 20, 0.05), draw(rng, 8, 20, 0.05)) != Verdict::same;
  EXPECT_LE(false_alarms, 3);  // at most alpha = 1 %
  // 20 % either way: SLOWER or FASTER, but for the draws where a side's 8 processes happen to split
  // into two modes (about 2 % of draws: the mode rule) and the other side then meets only a small mode.
  int slower = 0, faster = 0;
  for (int t = 0; t < 100; ++t) {
    slower += verdict(draw(rng, 8, 20, 0.05), draw(rng, 8, 24, 0.05)) == Verdict::slower;
    faster += verdict(draw(rng, 8, 20, 0.05), draw(rng, 8, 16, 0.05)) == Verdict::faster;
    // 3 % slower, beyond any doubt, is under the 5 % minimum effect.
    EXPECT_EQ(verdict(draw(rng, 8, 20, 0.002), draw(rng, 8, 20.6, 0.002)), Verdict::same);
    // 10 % slower, but 0.01 ms: under --min-change.
    EXPECT_EQ(verdict(draw(rng, 8, 0.1, 0.002), draw(rng, 8, 0.11, 0.002)), Verdict::same);
  }
  EXPECT_GE(slower, 95);
  EXPECT_GE(faster, 95);
  EXPECT_EQ(verdict({1, 1.01, 0.99}, {2, 2.01, 1.99}), Verdict::too_few);  // 3 against 3 cannot reach 0.01
  EXPECT_EQ(knn::judge_ab(side({}), side({1, 2}), {}).verdict, Verdict::unknown);
}

// Both sides bimodal at the same levels, in different mixes: all processes together say SLOWER, within
// the modes nothing moved. The same sides 20 % slower in both modes: SLOWER within modes. One side
// bimodal (levels 2x apart) and the other steady at the fast level, 20 % slower: its processes join
// the fast mode.
TEST(AbStats, BimodalSidesAreJudgedWithinModes) {
  std::mt19937_64 rng(3);
  for (int t = 0; t < 50; ++t) {
    const auto a = concat(draw(rng, 8, 50, 0.02), draw(rng, 4, 100, 0.02));
    const auto mixed = concat(draw(rng, 4, 50, 0.02), draw(rng, 8, 100, 0.02));
    const auto j = knn::judge_ab(side(a), side(mixed), {});
    EXPECT_TRUE(j.within_modes);
    ASSERT_EQ(j.a_modes.size(), 2u);
    EXPECT_EQ(j.a_modes[0].members.size(), 8u);
    ASSERT_EQ(j.b_modes.size(), 2u);
    EXPECT_EQ(j.b_modes[1].members.size(), 8u);
    EXPECT_GT(j.b_median_ms / j.a_median_ms, 1.2);  // the mix moved the medians ...
    EXPECT_EQ(j.verdict, Verdict::same);            // ... not the modes
    EXPECT_NEAR(j.ratio, 1.0, 0.04);
    const auto slower = concat(draw(rng, 8, 60, 0.02), draw(rng, 4, 120, 0.02));
    const auto js = knn::judge_ab(side(a), side(slower), {});
    EXPECT_EQ(js.verdict, Verdict::slower);
    EXPECT_NEAR(js.ratio, 1.2, 0.04);
    const auto steady = draw(rng, 12, 60, 0.02);
    const auto j1 = knn::judge_ab(side(a), side(steady), {});
    EXPECT_EQ(j1.b_modes.size(), 1u);
    EXPECT_EQ(j1.verdict, Verdict::slower);
    EXPECT_EQ(j1.a_used, 8);  // A's slow mode has no process of B to compare with
    EXPECT_NEAR(j1.ratio, 1.2, 0.04);
  }
}

// The paired design: each process has both settings, and the host's speed for the whole process
// (log-normal, spread 0.3: 167-327 ms for the same code, as v0 case 6 on the GPU machine's host)
// multiplies both. B is A + 10 %: paired, 16 processes find it every time; unpaired, the same medians
// rarely do. With no effect, the paired verdict stays SAME.
TEST(AbStats, PairedProcessesSeeAnEffectThatHostModesHide) {
  std::mt19937_64 rng(20261127);
  std::normal_distribution<double> host(0, 0.3), z(0, 0.02);
  int paired_slower = 0, unpaired_slower = 0, paired_false = 0;
  for (int draw = 0; draw < 200; ++draw) {
    AbSide a, b, same;
    for (int i = 0; i < 16; ++i) {
      const double mode = std::exp(host(rng));
      a.medians_ms.push_back(100 * mode * std::exp(z(rng)));
      b.medians_ms.push_back(110 * mode * std::exp(z(rng)));
      same.medians_ms.push_back(100 * mode * std::exp(z(rng)));
      a.rounds.push_back(i + 1), b.rounds.push_back(i + 1), same.rounds.push_back(i + 1);
    }
    paired_slower += knn::judge_paired(a, b, {}).verdict == Verdict::slower;
    unpaired_slower += knn::judge_ab(a, b, {}).verdict == Verdict::slower;
    paired_false += knn::judge_paired(a, same, {}).verdict != Verdict::same;
  }
  EXPECT_EQ(paired_slower, 200);
  EXPECT_LT(unpaired_slower, 60);  // the host's spread costs the unpaired design its power
  EXPECT_LE(paired_false, 2);       // alpha 0.01 and the 5 % minimum effect
}

// One process's B/A from its interleaved samples (A B, B A, A B, ...: pair i ran next to each other),
// on a host that changes speed within the process: in a third of the processes a stretch of 20 to 80 %
// of the loop runs 1.5-2x slow (as one setting's 0.1 s on the 2-core machine, 2x), otherwise 3 %
// noise per sample. B is A + 10 %. The median of the pairs' ratios B_i/A_i stays near 1.10 where the
// ratio of the two medians (each median on its own side of the stretch's edge) does not: the pairs'
// worst error over 600 processes is the smaller, and their spread too. Without a stretch the two
// agree. This is why judge_paired_rounds takes the pairs (ab_paired.cpp).
TEST(AbStats, PairedSampleRatiosResistASpeedChangeWithinTheProcess) {
  std::mt19937_64 rng(20261127);
  std::normal_distribution<double> z(0, 0.03);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> err_pairs, err_medians, calm_pairs, calm_medians;
  for (int process = 0; process < 600; ++process) {
    const int n = 40;
    const bool stretch = process % 3 == 0;
    const double length = 0.2 + 0.6 * u(rng), start = u(rng) * (1 - length), factor = 1.5 + 0.5 * u(rng);
    std::vector<double> a, b;
    for (int i = 0; i < n; ++i) {
      // Pair i's two calls at loop positions 2i and 2i+1 (A first when i is even).
      for (int side = 0; side < 2; ++side) {
        const double at = (2.0 * i + ((i % 2 == 0) == (side == 0) ? 0 : 1)) / (2.0 * n);
        const double host = stretch && at >= start && at < start + length ? factor : 1.0;
        (side == 0 ? a : b).push_back((side == 0 ? 10.0 : 11.0) * host * std::exp(z(rng)));
      }
    }
    const double pairs = knn::paired_sample_ratio(a, b), medians = knn::median_of(b) / knn::median_of(a);
    (stretch ? err_pairs : calm_pairs).push_back(std::abs(std::log(pairs / 1.1)));
    (stretch ? err_medians : calm_medians).push_back(std::abs(std::log(medians / 1.1)));
  }
  const auto worst = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  EXPECT_LT(worst(err_pairs), 0.05) << "pairs: B/A within 5 % in every process with a slow stretch";
  EXPECT_LT(worst(err_pairs), 0.5 * worst(err_medians)) << worst(err_pairs) << " against " << worst(err_medians);
  EXPECT_LT(knn::median_of(err_pairs), knn::median_of(err_medians));
  EXPECT_NEAR(knn::median_of(calm_pairs), knn::median_of(calm_medians), 0.01) << "no stretch: the two alike";
  EXPECT_TRUE(std::isnan(knn::paired_sample_ratio({1, 2}, {1})));  // counts differ: no pairs
}

TEST(AbStats, SignedRankTestExactValues) {
  // 8 differences all of one sign: the most extreme of 2^8 sign patterns, each tail once: p = 2/256.
  EXPECT_DOUBLE_EQ(knn::signed_rank_p({1, 2, 3, 4, 5, 6, 7, 8}), 2.0 / 256);
  // Ranks 1..4, the smallest negative: W+ = 9, W- = 1; P(W ≤ 1) = 2/16 (sums 0 and 1), two-sided 4/16.
  EXPECT_DOUBLE_EQ(knn::signed_rank_p({-0.1, 0.2, 0.3, 0.4}), 4.0 / 16);
  EXPECT_DOUBLE_EQ(knn::signed_rank_p({0, 0}), 1.0);  // zero differences carry no sign
  AbSide a, b;
  for (int i = 0; i < 4; ++i) a.medians_ms.push_back(10), b.medians_ms.push_back(12), a.rounds.push_back(i), b.rounds.push_back(i);
  EXPECT_EQ(knn::judge_paired(a, b, {}).verdict, Verdict::too_few);  // 4 processes: p >= 2/16 > 0.01
}

// ---------------------------------------------------------------- the command's bad inputs

namespace {

knn::testing::Run ab(const std::string& args) { return knn::testing::run(KNN_TEST_BINARY, "ab " + args); }

const std::string kTiny = "--k 3 --m 4 --n 2000 --version t7 --warmup 0 --min-samples 3 --min-time 0 --processes 2";

// An executable script `name` in the test's folder with `body` after the shebang.
std::string script(const std::string& name, const std::string& body) {
  const std::string path = knn::testing::tmp_path(name);
  std::ofstream(path) << "#!/bin/sh\n" << body;
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// A knnbench that appends the arguments of each of its runs (not -V) as a line to `args_file`.
std::string recording(const std::string& name, const std::string& args_file) {
  std::filesystem::remove(args_file);
  return script(name, fmt::format("[ \"$1\" = -V ] || echo \"$@\" >> '{}'\nexec '{}' \"$@\"\n", args_file, KNN_TEST_BINARY));
}

std::vector<std::string> lines_of(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST(AbCommand, RefusesAMissingBinary) {
  const auto r = ab("--a /no/such/knnbench " + kTiny);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--a /no/such/knnbench: no such file"), std::string::npos) << r.out;
}

TEST(AbCommand, RefusesABinaryThatIsNotKnnbench) {
  const auto r = ab("--b /bin/true " + kTiny);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--b /bin/true: not a knnbench binary"), std::string::npos) << r.out;
}

TEST(AbCommand, RefusesSidesWithDifferentInputs) {
  const std::string other = script("ab-other-seed", fmt::format("exec '{}' \"$@\" --seed 7\n", KNN_TEST_BINARY));
  const auto r = ab("--b " + other + " " + kTiny);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("the sides' inputs differ"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("seed=7"), std::string::npos) << r.out;
}

TEST(AbCommand, UnknownSideParameterIsAUsageErrorInTheChildsWords) {
  const auto r = ab("--a-param t7.nosuch=1 " + kTiny);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("side A"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nosuch"), std::string::npos) << r.out;
  const auto bad = ab("--processes 1 " + kTiny.substr(0, kTiny.find(" --processes")));
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--processes 1: expected at least 2"), std::string::npos) << bad.out;
}

// Side B crashes (SIGSEGV) in its second process: that round is dropped and said, the others count.
TEST(AbCommand, ACrashedProcessDropsItsRoundAndTheRunGoesOn) {
  const std::string counter = knn::testing::tmp_path("ab-crash-count");
  std::filesystem::remove(counter);
  const std::string crashing = script("ab-crash", fmt::format(
      "[ \"$1\" = -V ] && exec '{0}' -V\nn=$(cat '{1}' 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '{1}'\n"
      "[ $n -eq 2 ] && kill -SEGV $$\nexec '{0}' \"$@\"\n", KNN_TEST_BINARY, counter));
  const std::string json = knn::testing::tmp_path("ab-crash.json");
  const auto r = ab(fmt::format("--b {} {} --processes 3 --json {}", crashing, kTiny.substr(0, kTiny.find(" --processes")), json));
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out;
  EXPECT_NE(r.out.find("round 2 dropped: side B's process killed by signal 11"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["rounds_run"], 2);
  EXPECT_EQ(j["rounds_dropped"], 1);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["a"]["rounds"], (std::vector<int>{1, 3}));
  EXPECT_EQ(j["rows"][0]["b"]["medians_ms"].size(), 2u);
}

// --paired: every process runs both settings; the JSON says so, and each row has both settings of
// the same processes. Sides it cannot pair are refused with the reason.
TEST(AbCommand, PairedRunsBothSettingsInEveryProcess) {
  const std::string json = knn::testing::tmp_path("ab-paired.json");
  const std::string tiny = kTiny.substr(0, kTiny.find(" --processes"));
  const auto r = ab(fmt::format("--paired --a-param t7.slowdown=0 --b-param t7.slowdown=50 {} --processes 2 --json {}", tiny, json));
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out;
  EXPECT_NE(r.out.find("4 processes, each with both settings"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["paired"], true);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["a"]["rounds"], (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(j["rows"][0]["b"]["rounds"], (std::vector<int>{1, 2, 3, 4}));
  EXPECT_GT(j["rows"][0]["ratio"].get<double>(), 1.2);  // 50 % slower in each process
  const auto two = ab(fmt::format("--paired --b {} --a-param t7.slowdown=0 --b-param t7.slowdown=5 {}", KNN_TEST_BINARY, kTiny));
  EXPECT_EQ(two.code, 2) << two.out;
  EXPECT_NE(two.out.find("--paired runs both settings in one process"), std::string::npos) << two.out;
  const auto odd = ab("--paired --a-param t7.slowdown=0 --b-param t8.slowdown=5 " + kTiny);
  EXPECT_EQ(odd.code, 2) << odd.out;
  EXPECT_NE(odd.out.find("side B sets the parameters side A sets"), std::string::npos) << odd.out;
}

// --paired interleaves each process's two settings by default (--interleave passed, the per-process
// B/A from the interleaved samples); --no-interleave times them in blocks and takes the medians' ratio.
TEST(AbCommand, PairedProcessesInterleaveUnlessToldNot) {
  const std::string args_file = knn::testing::tmp_path("ab-paired-args");
  const std::string tiny = kTiny.substr(0, kTiny.find(" --processes"));
  for (const bool interleave : {true, false}) {
    const std::string bin = recording("ab-paired-record", args_file);
    const std::string json = knn::testing::tmp_path("ab-paired-interleave.json");
    const auto r = ab(fmt::format("--paired --a {0} --b {0} --a-param t7.slowdown=0 --b-param t7.slowdown=50 {1} --processes 2 --json {2}{3}",
                                  bin, tiny, json, interleave ? "" : " --no-interleave"));
    EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out;
    const std::vector<std::string> runs = lines_of(args_file);
    EXPECT_EQ(runs.size(), 4u) << r.out;
    for (const std::string& line : runs) EXPECT_EQ(line.find("--interleave") != std::string::npos, interleave) << line;
    const auto j = nlohmann::json::parse(std::ifstream(json));
    ASSERT_EQ(j["rows"].size(), 1u) << j.dump();
    const auto& row = j["rows"][0];
    EXPECT_EQ(row["process_ratio_of"], interleave ? "interleaved samples" : "medians");
    const auto ratios = row["process_ratios"].get<std::vector<double>>();
    ASSERT_EQ(ratios.size(), 4u);
    const auto a = row["a"]["medians_ms"].get<std::vector<double>>(), b = row["b"]["medians_ms"].get<std::vector<double>>();
    EXPECT_GT(knn::median_of(ratios), 1.2) << "50 % slower";
    if (!interleave)
      for (std::size_t i = 0; i < ratios.size(); ++i) EXPECT_DOUBLE_EQ(ratios[i], b[i] / a[i]);
  }
}

// Each process is a short run without the GPUs' rates (ab compares no floors), unless told otherwise.
TEST(AbCommand, ProcessesRunWithoutRatesAndShort) {
  const std::string args_file = knn::testing::tmp_path("ab-args");
  const auto r = ab(fmt::format("--b {} {}", recording("ab-record", args_file), kTiny));
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out;
  const std::vector<std::string> runs = lines_of(args_file);
  for (const std::string& line : runs) {
    EXPECT_NE(line.find("--no-rates"), std::string::npos) << line;
    EXPECT_NE(line.find("--max-noise 0"), std::string::npos) << line;
  }
  EXPECT_EQ(runs.size(), 2u) << r.out;  // side B's two processes
}

// SIGTERM to ab during round 2 (side B's process sends it to its parent): ab stops after that process,
// drops its round, writes the report of the round done and exits 143, as a run does.
TEST(AbCommand, ASignalStopsTheExperimentAndTheRoundsDoneAreReported) {
  const std::string counter = knn::testing::tmp_path("ab-term-count");
  std::filesystem::remove(counter);
  const std::string terminating = script("ab-term", fmt::format(
      "[ \"$1\" = -V ] && exec '{0}' -V\nn=$(cat '{1}' 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '{1}'\n"
      "[ $n -eq 2 ] && kill -TERM $PPID && sleep 1\nexec '{0}' \"$@\"\n", KNN_TEST_BINARY, counter));
  const std::string json = knn::testing::tmp_path("ab-term.json");
  std::filesystem::remove(json);
  const auto r = ab(fmt::format("--b {} {} --processes 4 --json {}", terminating, kTiny.substr(0, kTiny.find(" --processes")), json));
  EXPECT_EQ(r.code, 143) << r.out;
  EXPECT_NE(r.out.find("stopping after the process in flight"), std::string::npos) << r.out;
  ASSERT_TRUE(std::filesystem::exists(json)) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  EXPECT_EQ(j["rounds_run"], 1);
  EXPECT_EQ(j["rounds_dropped"], 1);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["a"]["rounds"], (std::vector<int>{1}));
  EXPECT_NE(j["notes"].dump().find("stopped by SIGTERM after 2 of 4 rounds"), std::string::npos) << j["notes"];
}

// A run whose sides are parameter settings: the rows pair across them, the JSON has every process's
// median and round, and progress goes to stderr.
TEST(AbCommand, ParameterSidesPairAndTheJsonHasEveryProcess) {
  const std::string json = knn::testing::tmp_path("ab-params.json");
  const auto r = ab(fmt::format("--a-param t7.slowdown=0 --b-param t7.slowdown=5 {} --processes 4 --json {}",
                                kTiny.substr(0, kTiny.find(" --processes")), json));
  EXPECT_TRUE(r.code == 0 || r.code == 1) << r.out;
  EXPECT_NE(r.out.find("ab: round 4/4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--param t7.slowdown=5"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["version"], "t7");
  EXPECT_EQ(row["a"]["rounds"], (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(row["b"]["medians_ms"].size(), 4u);
  EXPECT_EQ(row["verdict"], "too few samples");  // 4 against 4 processes cannot reach alpha 0.01
  // Each process's host readings ride with its median: the canary ran in every process.
  ASSERT_EQ(row["a"]["hosts"].size(), 4u);
  for (const auto& h : row["b"]["hosts"]) {
    EXPECT_GT(h["canary_cpu_ms"].get<double>(), 0) << h;
    EXPECT_GT(h["canary_mem_gbps"].get<double>(), 0) << h;
    EXPECT_FALSE(h["input_numa_node"].get<std::string>().empty()) << h;
  }
}

namespace {
// Eight processes: 6 fast (10 ms), 2 slow (18 ms), with the host readings `slow_host` on the slow ones.
AbSide side_with_hosts(const knn::AbHost& fast_host, const knn::AbHost& slow_host) {
  AbSide s = side({10, 10.2, 18, 9.9, 18.4, 10.1, 10, 10.3});
  for (double m : s.medians_ms) s.hosts.push_back(m > 15 ? slow_host : fast_host);
  return s;
}
}  // namespace

TEST(AbStats, ModesAreExplainedByTheCanaryOrAFactWhenOneSeparatesThem) {
  const knn::AbHost fast{1.0, 10.0, "0", 2048, "0-3", 0};
  AbSide s = side_with_hosts(fast, {1.0, 10.0, "0", 2048, "0-3", 0});
  const auto modes = knn::find_modes(s.medians_ms, 5);
  ASSERT_EQ(modes.size(), 2u);
  const std::string none = knn::explain_modes(s, modes, 5);
  EXPECT_EQ(none.rfind("nothing recorded separates the modes", 0), 0u) << none;
  EXPECT_NE(none.find("inputs' NUMA node 0 in both"), std::string::npos) << none;
  EXPECT_NE(none.find("canary CPU loop 1.00x"), std::string::npos) << none;

  s = side_with_hosts(fast, {1.0, 6.0, "0", 2048, "0-3", 0});  // the memory probe 1.67x slower in the slow processes
  std::string why = knn::explain_modes(s, modes, 5);
  EXPECT_EQ(why.rfind("the slow mode goes with what the host recorded", 0), 0u) << why;
  EXPECT_NE(why.find("canary memory probe 1.67x slower in the slow mode (ranges apart)"), std::string::npos) << why;

  s = side_with_hosts(fast, {1.0, 10.0, "1", 0, "0-3", 0});  // inputs on the other node, without huge pages
  why = knn::explain_modes(s, modes, 5);
  EXPECT_EQ(why.rfind("the slow mode goes with", 0), 0u) << why;
  EXPECT_NE(why.find("inputs' NUMA node 0 in the fast mode, 1 in the slow"), std::string::npos) << why;
  EXPECT_NE(why.find("inputs' huge pages yes in the fast mode, no in the slow"), std::string::npos) << why;

  knn::AbHost stolen = fast;  // the hypervisor took 6 % of the machine during each slow process
  stolen.steal_pct = 6;
  knn::AbHost calm = fast;
  calm.steal_pct = 0.2;
  s = side_with_hosts(calm, stolen);
  why = knn::explain_modes(s, modes, 5);
  EXPECT_EQ(why.rfind("the slow mode goes with", 0), 0u) << why;
  EXPECT_NE(why.find("steal time 0.2 % in the fast mode, 6 % in the slow (ranges apart)"), std::string::npos) << why;

  s.hosts.clear();  // an older binary: nothing recorded, nothing said
  EXPECT_EQ(knn::explain_modes(s, modes, 5), "");
  EXPECT_EQ(knn::explain_modes(side_with_hosts(fast, fast), {modes.front()}, 5), "");  // one mode
}
