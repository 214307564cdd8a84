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

}  // namespace

// What the writer writes, the strict reader reads.
TEST(StrictReader, TheWritersDocumentIsAccepted) {
  const fs::path p = scratch("good.json");
  std::ofstream(p) << good_document().dump();
  EXPECT_NO_THROW(knn::read_results_file(p.string()));
}

// tests/corpus/results/ (make_results_corpus.py): base.json, a file the tool wrote, with one thing
// made wrong in each other file. The reader refuses each, naming the file and the field; `report`
// refuses it with exit 2 and `compare` with a non-zero exit, both naming the file.
TEST(StrictReader, TheResultsCorpusIsRefusedNamingFileAndField) {
  const fs::path dir = fs::path(KNN_TEST_DATA) / "corpus" / "results";
  EXPECT_NO_THROW(knn::read_results_file((dir / "base.json").string()));
  std::ifstream tsv(dir / "expected.tsv");
  int files = 0;
  for (std::string line; std::getline(tsv, line);) {
    const auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const std::string file = (dir / line.substr(0, tab)).string(), expect = line.substr(tab + 1);
    ++files;
    std::string msg;
    try {
      knn::read_results_file(file);
    } catch (const knn::SchemaError& e) {
      msg = e.what();
    }
    ASSERT_FALSE(msg.empty()) << file << " was accepted";
    EXPECT_EQ(msg.rfind(file + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(expect), std::string::npos) << msg;
    const Ran report = run("report " + file + " --md -");
    EXPECT_EQ(report.code, 2) << report.out;
    EXPECT_NE(report.out.find(file), std::string::npos) << report.out;
    const Ran compare = run("compare " + (dir / "base.json").string() + " " + file);
    EXPECT_NE(compare.code, 0) << compare.out;
    EXPECT_NE(compare.out.find(file), std::string::npos) << compare.out;
  }
  EXPECT_GE(files, 15);
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
// AddressSanitizer reserves terabytes of shadow address space and aborts on a failed allocation
// instead of throwing std::bad_alloc, so neither RLIMIT_AS nor an allocation failure can be
// exercised under it: the sanitized build skips these two (the plain build runs them). knnbench is what runs under
// it: KNN_SANITIZE_BUILD says so where the test files themselves are not instrumented (tests/CMakeLists.txt).
#if defined(__SANITIZE_ADDRESS__) || defined(KNN_SANITIZE_BUILD)
#define KNN_SKIP_UNDER_ASAN() GTEST_SKIP() << "under AddressSanitizer: its shadow memory defeats RLIMIT_AS and it aborts on failed allocations"
#else
#define KNN_SKIP_UNDER_ASAN() (void)0
#endif

TEST(Memory, AllocationFailuresAndDeclaredWorkingMemoryAreSkipsAndTheRunGoesOn) {
  KNN_SKIP_UNDER_ASAN();
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
  KNN_SKIP_UNDER_ASAN();
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
