// Issue 25, "never silently wrong" and memory: the results reader refuses files that contradict
// themselves (naming file and field), inputs whose squared distances overflow fp32 are refused
// (naming the file and the value), and memory limits become skips with sizes while the run goes on.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "results_schema.hpp"
#include "stats.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("knn_never_wrong_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

struct Ran {
  int code;
  std::string out;
};

Ran run(const std::string& args) {
  FILE* p = ::popen((std::string(KNN_TEST_BINARY) + " " + args + " 2>&1").c_str(), "r");
  Ran r{-1, ""};
  if (!p) return r;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// A valid results document with two passes (cases 0 and 1 of v0).
json good_document() {
  knn::RunInfo info;
  info.started_utc = "2026-01-01T00:00:00Z";
  info.complete = true;
  std::vector<knn::Result> rs;
  for (int id : {0, 1}) {
    knn::Result r;
    r.problem_case.id = id;
    r.problem_case.dim = 2;
    r.problem_case.m = 1;
    r.problem_case.n = 4;
    r.version = "v0";
    r.status = knn::Status::pass;
    r.samples_ms = {1.0, 1.5, 1.25};
    r.stats = knn::summarize(r.samples_ms);
    rs.push_back(r);
  }
  return json::parse(knn::results_to_json(info, rs).dump());
}

// The reader's message for `doc` after `edit`, written to a file ("" when it was accepted).
std::string refusal(const std::string& name, const std::function<void(json&)>& edit, const std::string& raw = "") {
  json doc = good_document();
  edit(doc);
  const fs::path p = scratch(name);
  std::ofstream(p) << (raw.empty() ? doc.dump() : raw);
  try {
    knn::read_results_file(p.string());
  } catch (const knn::SchemaError& e) {
    return e.what();
  }
  return "";
}

void expect_refused(const std::string& name, const std::function<void(json&)>& edit, const std::string& field, const std::string& raw = "") {
  const std::string msg = refusal(name, edit, raw);
  ASSERT_FALSE(msg.empty()) << name << " was accepted";
  EXPECT_NE(msg.find(scratch(name).string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(field), std::string::npos) << msg;
}

}  // namespace

TEST(StrictReader, TheGoodDocumentIsAccepted) { EXPECT_EQ(refusal("good.json", [](json&) {}), ""); }

TEST(StrictReader, ContradictionsAreRefusedNamingFileAndField) {
  expect_refused("negative.json", [](json& d) { d["results"][0]["stats"]["median_ms"] = -1.0; }, "results[0].stats.median_ms");
  expect_refused("count.json", [](json& d) { d["results"][1]["stats"]["samples"] = 7; }, "results[1].stats.samples: 7, but samples_ms holds 3");
  expect_refused("median.json", [](json& d) { d["results"][0]["stats"]["median_ms"] = 1.4; }, "the median of samples_ms is 1.25");
  expect_refused("negsample.json", [](json& d) { d["results"][0]["samples_ms"][1] = -3.0; }, "results[0].samples_ms[1]");
  expect_refused("null_median.json", [](json& d) { d["results"][0]["stats"]["median_ms"] = nullptr; }, "results[0].stats.median_ms");
  expect_refused("duplicate.json", [](json& d) { d["results"].push_back(d["results"][0]); }, "results[2].version: case 0 with v0 again (already results[0])");
  expect_refused("status.json", [](json& d) { d["results"][0]["status"] = "maybe"; }, "results[0].status");
  expect_refused("nostats.json", [](json& d) { d["results"][0].erase("stats"); }, "results[0].stats");
  expect_refused("zero_samples.json", [](json& d) {
    d["results"][0]["stats"]["samples"] = 0;
    d["results"][0].erase("samples_ms");
  }, "results[0].stats.samples");
}

TEST(StrictReader, ANumberBeyondADoubleNamesTheFile) {
  std::string raw = good_document().dump();
  raw.replace(raw.find("\"median_ms\":") + 12, 0, "1e400, \"x\":");
  expect_refused("1e400.json", [](json&) {}, "1e400", raw);
}

// compare and report read through the same reader: a corrupt file is exit 2, not rows of "????".
TEST(StrictReader, CompareAndReportRefuseACorruptFile) {
  json bad = good_document();
  bad["results"][0]["stats"]["median_ms"] = -5.0;
  const fs::path good = scratch("cmp_good.json"), corrupt = scratch("cmp_bad.json");
  std::ofstream(good) << good_document().dump();
  std::ofstream(corrupt) << bad.dump();
  const Ran c = run("compare " + good.string() + " " + corrupt.string());
  EXPECT_NE(c.code, 0) << c.out;
  EXPECT_NE(c.out.find(corrupt.string()), std::string::npos) << c.out;
  const Ran r = run("report " + corrupt.string() + " --md " + scratch("cmp.md").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("stats.median_ms"), std::string::npos) << r.out;
}

// References near 1e20 are finite floats, but (2e20)² overflows: v0 would answer index 0 and pass.
TEST(Overflow, InputsWhoseSquaredDistancesOverflowAreRefused) {
  const fs::path csv = scratch("big.csv"), cfg = scratch("big_matrix.json");
  {
    std::ofstream out(csv);
    for (int i = 0; i < 10; ++i) out << (i == 9 ? "1e20,1e20,1e20,1e20\n" : "0.5,0.25,0,1\n");
  }
  std::ofstream(cfg) << json{{"schema_version", 1},
                             {"cases", {{{"id", 3}, {"k", 4}, {"m", 2}, {"n", 10}, {"topk", 1}, {"references_file", csv.filename().string()}}}}}
                            .dump();
  const Ran r = run("--config " + cfg.string() + " --version v0 --warmup 0 --min-samples 1 --json " + scratch("big.out.json").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("case 3: references_file big.csv holds |value| 1e+20"), std::string::npos) << r.out;
  // Values that stay in range pass: 1e18 · 2 squared · 4 is 1.6e37.
  {
    std::ofstream out(csv);
    for (int i = 0; i < 10; ++i) out << (i == 9 ? "1e18,1e18,1e18,1e18\n" : "0.5,0.25,0,1\n");
  }
  const Ran ok = run("--config " + cfg.string() + " --version v0 --warmup 0 --min-samples 1 --json " + scratch("ok.out.json").string());
  EXPECT_EQ(ok.code, 0) << ok.out;
}

// An allocation that fails inside one (case, version) is a skip with sizes; the run goes on. A
// declared working memory over what is available is a skip before any call.
TEST(Memory, AllocationFailuresAndDeclaredWorkingMemoryAreSkipsAndTheRunGoesOn) {
  const fs::path cfg = scratch("mem.json"), out = scratch("mem.out.json");
  std::ofstream(cfg) << R"({"schema_version":1,"cases":[{"id":0,"k":3,"m":2,"n":8}]})";
  const Ran r = run("--config " + cfg.string() + " --version t10,t11,v0 --warmup 0 --min-samples 1 --max-noise 0 --json " + out.string());
  EXPECT_EQ(r.code, 0) << r.out;
  const auto doc = knn::read_results_file(out.string());
  ASSERT_EQ(doc.results.size(), 3u);
  auto of = [&](const std::string& v) {
    for (const auto& x : doc.results)
      if (x.version == v) return x;
    ADD_FAILURE() << "no result of " << v;
    return knn::Result{};
  };
  EXPECT_EQ(of("t10").status, knn::Status::skip);
  EXPECT_NE(of("t10").reason.find("out of host memory during the calls (inputs and answers"), std::string::npos) << of("t10").reason;
  EXPECT_EQ(of("t11").status, knn::Status::skip);
  EXPECT_NE(of("t11").reason.find("needs 1073741824.00 GiB of host memory"), std::string::npos) << of("t11").reason;
  EXPECT_EQ(of("v0").status, knn::Status::pass);
}

// ulimit -v: the inputs of case 0 (3 GiB) are over what RLIMIT_AS leaves; it is skipped with the
// sizes (it used to be std::bad_alloc, "internal error", exit 3), and case 1 still runs.
TEST(Memory, RlimitAsIsHonoured) {
  const fs::path cfg = scratch("rlimit.json"), out = scratch("rlimit.out.json");
  std::ofstream(cfg) << R"({"schema_version":1,"cases":[{"id":0,"k":4096,"m":1,"n":200000},{"id":1,"k":3,"m":2,"n":8}]})";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit lim{rlim_t(2) << 30, rlim_t(2) << 30};
    ::setrlimit(RLIMIT_AS, &lim);
    if (FILE* f = std::fopen(scratch("rlimit.log").c_str(), "w")) {
      ::dup2(fileno(f), 1);
      ::dup2(fileno(f), 2);
    }
    ::execl(KNN_TEST_BINARY, KNN_TEST_BINARY, "--config", cfg.c_str(), "--version", "v0", "--warmup", "0", "--min-samples", "1", "--max-noise", "0",
            "--json", out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream log(scratch("rlimit.log"));
  const std::string text(std::istreambuf_iterator<char>(log), {});
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 0) << text;
  const auto doc = knn::read_results_file(out.string());
  ASSERT_EQ(doc.results.size(), 2u) << text;
  EXPECT_EQ(doc.results[0].status, knn::Status::skip);
  EXPECT_NE(doc.results[0].reason.find("GiB of host memory, host has"), std::string::npos) << doc.results[0].reason;
  EXPECT_EQ(doc.results[1].status, knn::Status::pass) << doc.results[1].reason;
}

// The strictness refuses no file the tool wrote: every committed results file still reads.
TEST(StrictReader, EveryCommittedResultsFileIsAccepted) {
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(KNN_SOURCE_DIR) / "results")) {
    if (e.path().extension() != ".json") continue;
    ++files;
    EXPECT_NO_THROW(knn::read_results_file(e.path().string())) << e.path();
  }
  EXPECT_GT(files, 0) << "no committed results file found: the test proves nothing";
}
