// End to end: the same version run twice is SAME, and 10 % more of its own work is SLOWER.
// t7 (tests/versions/t7_v0_slowed.cpp) is v0 with a parameter, t7.slowdown, that repeats part of
// its work. Each side of a comparison is a "run" made of three separate processes, interleaved in a
// Latin square of orders (A B S, B S A, S A B), so that a drift of the machine during the test
// falls on every side; per case a run keeps the process whose median is the middle one. On shared
// virtual machines one process in a few ran a single-threaded loop 10-40 % slower or faster than
// its twins for its whole life (a busy neighbour on the same physical core): the middle of three
// is immune to one such process per side, which one process per side was not. They run at the highest priority the
// user may set (nice -19 works for root; anyone else gets a warning and the normal priority):
// the verdict rule is under test here, not the neighbours. (Side by side instead, two processes
// on a busy 2-core machine were far noisier.) On an oversubscribed machine (1-minute load average
// above 1.5 × the cores) medians of separate processes moved by up to 2× whatever the rule: the
// test then skips and says so, as the harness warns of a busy machine.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>
#include <vector>
#include <utility>

#include "compare.hpp"
#include "experiment_support.hpp"

namespace {

// Cases whose v0 median is 1-2 ms on a 2-core CPU machine: long enough for the timer, short
// enough that most calls run between two preemptions. All 3-D: a 16-D case (one query against
// 196 608 rows of 64 bytes) came out only 3 % slower for 10 % more rows on one 2-core machine, in
// two attempts alike (its repeated rows cost less than the first pass over them there), while the
// 3-D cases came out 7-10 % slower.
constexpr const char* kMatrix = R"({"schema_version": 1, "defaults": {"topk": 1, "distribution": "uniform", "seed": 20240607},
 "cases": [{"id": 0, "k": 3, "m": 1, "n": 786432}, {"id": 1, "k": 3, "m": 4, "n": 196608}, {"id": 2, "k": 3, "m": 24, "n": 32768}]})";

std::string command(const std::string& dir, const std::string& name, int slowdown_pct) {
  const std::string nice = std::system("command -v nice > /dev/null 2>&1") == 0 ? "nice -n -19 " : "";
  return fmt::format(
      "{}'{}' --config '{}/matrix.json' --version t7 --param t7.slowdown={} --warmup 10 --min-time 0.7 --max-samples 2000 --quiet "
      "--json '{}/{}.json' > '{}/{}.log' 2>&1",
      nice, KNN_TEST_BINARY, dir, slowdown_pct, dir, name, dir, name);
}

knn::ResultsDocument run_t7(const std::string& dir, const std::string& name, int slowdown_pct) {
  const std::string cmd = command(dir, name, slowdown_pct);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return knn::read_results_file(dir + "/" + name + ".json");
}

// One run made of three processes: per case, the result whose median is the middle one.
knn::ResultsDocument middle_of_three(const std::vector<knn::ResultsDocument>& runs) {
  knn::ResultsDocument out = runs.front();
  for (std::size_t i = 0; i < out.results.size(); ++i) {
    std::vector<const knn::Result*> same_case;
    for (const auto& r : runs) same_case.push_back(&r.results.at(i));
    std::sort(same_case.begin(), same_case.end(), [](const knn::Result* a, const knn::Result* b) { return a->stats.median < b->stats.median; });
    out.results[i] = *same_case[same_case.size() / 2];
  }
  return out;
}

std::string describe(const knn::CompareReport& rep) { return knn::format_compare(rep, false); }

// The widest spread of one case's median among the three processes of one side (the same binary
// and settings), or of the host canary within one process (its max/min, what `report` warns about
// over 1.3): the ratio, and the side and case or process, in words.
std::pair<double, std::string> widest_spread(const std::vector<std::vector<knn::ResultsDocument>*>& sides) {
  std::pair<double, std::string> out{1.0, ""};
  const char* names[] = {"original A", "original B", "slowed"};
  for (std::size_t k = 0; k < sides.size(); ++k) {
    for (std::size_t i = 0; i < sides[k]->front().results.size(); ++i) {
      std::vector<double> m;
      for (const auto& run : *sides[k]) m.push_back(run.results.at(i).stats.median);
      const auto [lo, hi] = std::minmax_element(m.begin(), m.end());
      if (*lo > 0 && *hi / *lo > out.first)
        out = {*hi / *lo, fmt::format("{}, case {}: {:.3f}, {:.3f}, {:.3f} ms in its three processes", names[k], i, m[0], m[1], m[2])};
    }
    for (std::size_t r = 0; r < sides[k]->size(); ++r) {
      const knn::HostShift canary = knn::host_shift((*sides[k])[r].results, (*sides[k])[r].results);
      if (canary.known && canary.spread_a > out.first)
        out = {canary.spread_a, fmt::format("{}, process {}: the host canary's max/min within the run", names[k], r + 1)};
    }
  }
  return out;
}

// One attempt: nine processes, then the verdicts. Returns what went wrong (empty: all as promised);
// `spread` gets the widest spread of one side's three processes (widest_spread); `drift_only` whether
// every problem was a HOST DRIFT verdict of original against slowed (the canary moved beyond the
// threshold between the sides, so compare withheld the verdict, as it is meant to).
std::vector<std::string> attempt(const std::string& d, std::vector<knn::ResultsDocument>& a, std::pair<double, std::string>& spread,
                                 bool& drift_only) {
  std::vector<std::string> problems;
  drift_only = false;
  std::vector<knn::ResultsDocument> b, s;
  a.clear();
  // A Latin square of orders: each side runs once first, once second and once third, so that an
  // effect of the position (the process after the slowed one, the first one of the test) falls on
  // every side alike. Before, A always followed the slowed run and came out 4-5 % slower at times.
  const int order[3][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}};
  for (int i = 1; i <= 3; ++i)
    for (int side : order[i - 1]) {
      if (side == 0) a.push_back(run_t7(d, fmt::format("originalA{}", i), 0));
      if (side == 1) b.push_back(run_t7(d, fmt::format("originalB{}", i), 0));
      if (side == 2) s.push_back(run_t7(d, fmt::format("slowed{}", i), 10));
    }
  spread = widest_spread({&a, &b, &s});
  const auto o1 = middle_of_three(a), o2 = middle_of_three(b), s1 = middle_of_three(s);
  {
    const knn::CompareReport rep = knn::compare_runs(o1, o2, {});
    if (rep.pairs.size() != 3u) return {"original against original: not 3 pairs\n" + describe(rep)};
    for (const auto& p : rep.pairs)
      if (p.verdict != knn::Verdict::same) problems.push_back(fmt::format("original against original, case {}: {}\n{}", p.case_id, knn::to_string(p.verdict), describe(rep)));
    if (rep.exit_code() != 0) problems.push_back(fmt::format("original against original: exit code {}", rep.exit_code()));
  }
  const bool originals_same = problems.empty();
  bool all_drift = true;  // every wrong verdict of original against slowed is HOST DRIFT
  // The slowed side's t7 records slowdown=10, the original's 0: paired anyway (--ignore-params).
  knn::CompareOptions across_params;
  across_params.ignore_params = true;
  for (const auto& [original, slowed] : {std::pair{&o1, &s1}, std::pair{&o2, &s1}}) {
    const knn::CompareReport rep = knn::compare_runs(*original, *slowed, across_params);
    if (rep.pairs.size() != 3u) return {"original against slowed: not 3 pairs\n" + describe(rep)};
    int judged = 0;
    for (const auto& p : rep.pairs) {
      if (p.a_median_ms < 1.0) continue;  // the promise holds from 1 ms
      ++judged;
      if (p.verdict != knn::Verdict::slower) {
        all_drift = all_drift && p.verdict == knn::Verdict::host_drift;
        problems.push_back(fmt::format("original against slowed, case {}: {}\n{}", p.case_id, knn::to_string(p.verdict), describe(rep)));
      }
    }
    if (judged < 2) all_drift = false, problems.push_back("cases under 1 ms on this machine: the test would check little\n" + describe(rep));
  }
  drift_only = originals_same && all_drift && !problems.empty();
  return problems;
}

}  // namespace

// A shared 2-core machine sometimes drifts by more than the 5 % threshold for a whole minute: one
// attempt that breaks the promise is printed and the experiment is repeated once; the test fails
// when the second attempt breaks it too (each attempt is a fresh set of nine processes).
TEST(Verdicts, SameBinaryTwiceIsSameAndTenPercentMoreWorkIsSlower) {
  if (const auto busy = knn::testing::machine_busy()) GTEST_SKIP() << *busy << "; timings of separate runs are not comparable";
  const auto dir = knn::testing::experiment_folder("knn_verdicts", kMatrix);
  const std::string d = dir.string();
  std::vector<knn::ResultsDocument> a;
  std::pair<double, std::string> spread1, spread2;
  bool drift1 = false, drift2 = false;
  std::vector<std::string> problems = attempt(d, a, spread1, drift1);
  if (!problems.empty()) {
    std::cout << "attempt 1 broke the promise (repeated once):\n";
    for (const auto& p : problems) std::cout << p << "\n";
    problems = attempt(d, a, spread2, drift2);
  }
  // A host whose speed jumps between processes (the same binary and settings 1.5-2x apart from one
  // process to the next, as docs/measurement.md describes), or within one (its canary's max/min over
  // 1.3), leaves nothing for a verdict between separate runs to find: the promise needs a steady
  // host. Both attempts must have seen such a jump, far beyond the 5 % threshold, for the test to
  // skip; the jump is named.
  constexpr double kHostJump = 1.3;
  if (!problems.empty() && spread1.first > kHostJump && spread2.first > kHostJump)
    GTEST_SKIP() << fmt::format("host speed jumps between processes (widest: {}; {:.2f}x, then {:.2f}x in the repeat: {}): "
                                "verdicts between separate runs need a steady host",
                                spread1.second, spread1.first, spread2.first, spread2.second);
  // A host whose canary (one thread's loop and one memory read) moves beyond the 5 % threshold between
  // the sides in both attempts: compare then withholds its verdict on these host-bound results (HOST
  // DRIFT, the product's answer), so the promise cannot be checked here. Only HOST DRIFT verdicts of
  // original against slowed qualify; any other wrong verdict fails. (A 2-core VM saw the memory read
  // 1.05-1.19x as long in the slowed runs, every attempt of one day.)
  if (!problems.empty() && drift1 && drift2)
    GTEST_SKIP() << "the host canary moved beyond the threshold between the sides in both attempts (HOST DRIFT on every case): "
                    "verdicts between separate runs need a steady host; attempt 2's report:\n"
                 << problems.front();
  for (const auto& p : problems) ADD_FAILURE() << "attempt 2: " << p;
  // The command line: a run against itself exits 0 (nothing SLOWER).
  const std::string cmd = fmt::format("'{}' compare '{}' '{}' > /dev/null", KNN_BINARY, a[0].file, a[0].file);
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0);
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}
