// The screen: lines within 100 columns, skips collapsed per reason, the fastest version marked,
// colour only on a terminal (run under script(1)) and never piped or with NO_COLOR.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "report.hpp"
#include "terminal.hpp"

namespace {

using knn::testing::run;
using knn::testing::tmp_path;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto cr = line.rfind('\r');  // a progress line rewritten in place: what stays on screen
    out.push_back(cr == std::string::npos ? line : line.substr(cr + 1));
  }
  return out;
}

void expect_fits(const std::string& text) {
  for (const auto& l : lines_of(text)) EXPECT_LE(knn::display_width(l), knn::kScreenWidth) << l;
}

knn::Result make(int case_id, int k, const std::string& version, knn::Status status, double median, const std::string& reason = "") {
  knn::Result r;
  r.problem_case.id = case_id;
  r.problem_case.dim = k;
  r.problem_case.m = 1024;
  r.problem_case.n = 1 << 20;
  r.version = version;
  r.status = status;
  r.reason = reason;
  r.validated = status == knn::Status::pass;
  r.validation.queries_checked = r.problem_case.m;
  r.stats.median = median;
  r.stats.samples = status == knn::Status::pass ? 5 : 0;
  r.samples_ms.assign(r.stats.samples, median);
  return r;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

TEST(Terminal, VersionAndIdRuns) {
  std::vector<std::string> ids;
  for (int i : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13}) ids.push_back(fmt::format("v{}", i));
  EXPECT_EQ(knn::version_runs(ids), "v1–v9, v11, v13");
  EXPECT_EQ(knn::version_runs({"v1", "v2"}), "v1, v2");
  EXPECT_EQ(knn::version_runs({"t6", "v7", "v8", "v9"}), "t6, v7–v9");
  EXPECT_EQ(knn::id_runs({0, 1, 2, 3, 8, 10, 11}), "0–3, 8, 10, 11");
  EXPECT_EQ(knn::id_runs({}), "");
}

TEST(Terminal, WrapKeepsEveryWordWithinTheWidth) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  std::string text, joined;
  for (int i = 0; i < 200; ++i) {
    const std::string word(1 + rng() % (i == 50 ? 250 : 14), char('a' + i % 26));
    text += (text.empty() ? "" : " ") + word;
  }
  const std::string out = knn::wrap(text, 100, 6);
  for (const auto& l : lines_of(out)) {
    EXPECT_LE(l.size(), 100u) << l;
    joined += l;
  }
  std::string no_space = text;
  no_space.erase(std::remove(no_space.begin(), no_space.end(), ' '), no_space.end());
  joined.erase(std::remove(joined.begin(), joined.end(), ' '), joined.end());
  EXPECT_EQ(joined, no_space);  // nothing lost, nothing added but the indent
}

TEST(Terminal, WideTablesSplitIntoBlocksWithTheLabelRepeated) {
  knn::TableRows rows{{"version"}};
  for (int j = 0; j < 30; ++j) rows[0].push_back(fmt::format("case {}", j));
  for (int v = 0; v < 14; ++v) {
    rows.push_back({fmt::format("v{}", v)});
    for (int j = 0; j < 30; ++j) rows.back().push_back(fmt::format("{:.4f}", 1000.0 / (v + j + 1)));
  }
  const std::string out = knn::text_table_in_blocks(rows, knn::label_then_numbers(31), 100);
  expect_fits(out);
  for (int j = 0; j < 30; ++j) {
    const std::string head = fmt::format(" case {}", j);
    std::size_t count = 0;
    for (std::size_t at = out.find(head + " "); at != std::string::npos; at = out.find(head + " ", at + 1)) ++count;
    for (std::size_t at = out.find(head + "\n"); at != std::string::npos; at = out.find(head + "\n", at + 1)) ++count;
    EXPECT_EQ(count, 1u) << head;
  }
  const auto blocks = std::count(out.begin(), out.end(), '\n') / 16 + 1;
  EXPECT_GE(blocks, 3);
  EXPECT_EQ(std::count(out.begin(), out.end(), 'v') / 14, blocks);  // the label column in every block (v0..v13 once each)
}

TEST(Terminal, WrapLinesLeavesShortLinesAlone) {
  const std::string long_line = "  " + std::string(60, 'a') + " " + std::string(60, 'b');
  const std::string text = "short\n\n" + long_line + "\nlast";
  EXPECT_EQ(knn::wrap_lines(text, 100), "short\n\n  " + std::string(60, 'a') + "\n    " + std::string(60, 'b') + "\nlast");
}

// The screen of a GPU-less machine: 11 GPU versions skip every case; one line says so.
TEST(Screen, SkipsCollapseIntoOneLinePerReasonAndTheFastestIsMarked) {
  std::vector<knn::Result> all;
  std::mt19937 rng(7);
  for (int c = 0; c < 12; ++c) {
    const int k = c % 2 ? 16 : 3;
    for (int v = 0; v <= 13; ++v) {
      const std::string id = fmt::format("v{}", v);
      if (v == 0 || v == 10) all.push_back(make(c, k, id, knn::Status::pass, v == 0 ? 100.0 + c : (c == 4 ? 200.0 : 1.0 + c)));
      else if (v == 12 && k == 3) all.push_back(make(c, k, id, knn::Status::pass, 50.0 + c));
      else if (v == 12) all.push_back(make(c, k, id, knn::Status::skip, 0, "octree needs k = 3"));
      else all.push_back(make(c, k, id, knn::Status::skip, 0, "no CUDA device"));
    }
  }
  all[0].calls_per_sample = 40;  // said by the note and by the remarks: once on the line
  all[0].note = "40 calls per sample (times are per call)";
  knn::RunInfo info;
  auto screen = knn::make_screen_reporter(false);
  ::testing::internal::CaptureStdout();
  std::vector<knn::Result> so_far;
  int index = 0;
  for (const auto& r : all) {
    screen->start(info, r.problem_case, r.version, index++, int(all.size()));
    so_far.push_back(r);
    screen->result(info, so_far);
  }
  screen->end(info, all);
  const std::string out = ::testing::internal::GetCapturedStdout();
  expect_fits(out);
  EXPECT_EQ(out.find('\033'), std::string::npos) << "colour in piped output";
  EXPECT_EQ(out.find("Skip:"), std::string::npos) << out;
  const auto first = out.find("calls per sample");
  ASSERT_NE(first, std::string::npos) << out;
  EXPECT_EQ(out.find("calls per sample", first + 1), std::string::npos) << out;
  const auto lines = lines_of(out);
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("no CUDA device") != std::string::npos; }), 1) << out;
  EXPECT_NE(out.find("Skipped v1–v9, v11, v13 on every case: no CUDA device\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Skipped v12 on cases 1, 3, 5, 7, 9, 11: octree needs k = 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("30 passed, 0 failed, 138 skipped"), std::string::npos) << out;
  // v10 is fastest everywhere but case 4, where v12 (54 ms) beats v0 (104) and v10 (200).
  std::string v10_row, v12_row;
  for (const auto& l : lines)
    if (l.rfind("v10 ", 0) == 0) v10_row += l + "\n";
    else if (l.rfind("v12 ", 0) == 0) v12_row += l + "\n";
  EXPECT_EQ(std::count(v10_row.begin(), v10_row.end(), '<'), 11) << v10_row;
  EXPECT_NE(v10_row.find("200.0"), std::string::npos) << v10_row;
  EXPECT_EQ(std::count(v12_row.begin(), v12_row.end(), '<'), 1) << v12_row;
  EXPECT_NE(v12_row.find("54.000<"), std::string::npos) << v12_row;
  EXPECT_NE(out.find("< = the fastest version of the case."), std::string::npos);
}

// The real program, piped, under a terminal (script(1)) and under a terminal with NO_COLOR.
TEST(Screen, ColourOnATerminalOnlyAndLinesFit) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed: no pseudo-terminal";
  const std::string args = std::string(" --config ") + KNN_SOURCE_DIR +
                           "/configs/default.json --case 0-5 --version v0,v10,v12 --warmup 0 --min-samples 1 --min-time 0 "
                           "--max-noise 0 --json " + tmp_path("screen.json");
  const auto piped = run(KNN_BINARY, args);
  ASSERT_EQ(piped.code, 0) << piped.out;
  EXPECT_EQ(piped.out.find('\033'), std::string::npos) << piped.out;
  expect_fits(piped.out);
  const std::string under_script = "script -qec " + quoted(std::string(KNN_BINARY) + args) + " /dev/null";
  const auto tty = run("", under_script);
  ASSERT_EQ(tty.code, 0) << tty.out;
  EXPECT_NE(tty.out.find("\033[1;32m"), std::string::npos) << "no green fastest cell on a terminal:\n" << tty.out;
  EXPECT_NE(tty.out.find("ETA"), std::string::npos) << "no progress line on a terminal";
  expect_fits(tty.out);
  const auto no_colour = run("NO_COLOR=1", under_script);
  ASSERT_EQ(no_colour.code, 0) << no_colour.out;
  EXPECT_EQ(no_colour.out.find("\033[1;"), std::string::npos) << no_colour.out;
  EXPECT_NE(no_colour.out.find('<'), std::string::npos) << "the fastest mark without colour";
}

// On a terminal the progress line names the data generation and the validation reference, and a
// call longer than a few seconds shows its time and the calls made so far (t4 sleeps 3 s a call).
TEST(Screen, ProgressShowsStepsAndALongCall) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed: no pseudo-terminal";
  const std::string cmd = std::string(KNN_TEST_BINARY) + " --config " + KNN_SOURCE_DIR +
                          "/configs/default.json --case 0 --version t4 --warmup 1 --min-samples 2 --max-samples 2 --min-time 0 "
                          "--max-noise 0 --max-time 60 --json " + tmp_path("slow.json");
  const auto tty = run("", "script -qec " + quoted(cmd) + " /dev/null");
  ASSERT_EQ(tty.code, 0) << tty.out;
  EXPECT_NE(tty.out.find("case 0: generating data"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("case 0: validation reference"), std::string::npos) << tty.out;
  // 3 calls of 3 s: at 4 s or later the line says how long and how many calls so far.
  EXPECT_NE(tty.out.find(", calls so far: 1)"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find(", calls so far: 2)"), std::string::npos) << tty.out;
  std::string quick = cmd.substr(std::string(KNN_TEST_BINARY).size());
  quick.replace(quick.find("--version t4"), 12, "--version v0");
  const auto piped = run(KNN_TEST_BINARY, quick);
  ASSERT_EQ(piped.code, 0) << piped.out;
  EXPECT_EQ(piped.out.find("generating data"), std::string::npos) << "progress in piped output:\n" << piped.out;
}
