// The flags a new user tries first: the program's version, filters that intersect, --list with
// filters, version ranges, an ad-hoc case, --devices without a GPU, and the exit codes.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>
#include <algorithm>

#include "build_info.hpp"
#include "cli_support.hpp"

namespace {

using knn::testing::run;
using knn::testing::tmp_path;

const std::string kConfig = std::string("--config ") + KNN_SOURCE_DIR + "/configs/default.json";
const std::string kFast = " --warmup 0 --min-samples 1 --min-time 0 --max-noise 0 ";

// The case ids a --list printed, in order.
std::vector<int> listed_cases(const std::string& out) {
  std::vector<int> ids;
  const auto start = out.find("\n    id ");
  if (start == std::string::npos) return ids;
  std::istringstream in(out.substr(out.find('\n', start + 1) + 1));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    int id = -1;
    if (l >> id) ids.push_back(id);
  }
  return ids;
}

bool lists_version(const std::string& out, const std::string& id) { return out.find("\n  " + id + " ") != std::string::npos; }

}  // namespace

TEST(CliFlags, ProgramVersionFromDashVAndTheSubcommand) {
  const std::string expect = std::string("knnbench ") + knn::build_info::version + "\n";
  for (const char* args : {"-V", "version"}) {
    const auto r = run(KNN_BINARY, args);
    EXPECT_EQ(r.code, 0) << args << ": " << r.out;
    EXPECT_EQ(r.out, expect) << args;
  }
  // --version stays the version selector: alone it wants a value, and the message points to -V.
  const auto alone = run(KNN_BINARY, "--version");
  EXPECT_EQ(alone.code, 2) << alone.out;
  EXPECT_NE(alone.out.find("the program's version: -V"), std::string::npos) << alone.out;
}

TEST(CliFlags, CaseAndGroupIntersect) {
  // Case 5 is in smoke, case 9 is not: together with --group smoke only 5 remains.
  const auto r = run(KNN_BINARY, kConfig + " --list --case 5,9 --group smoke");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(listed_cases(r.out), std::vector<int>{5});
  const auto all = run(KNN_BINARY, kConfig + " --list --group smoke");
  const auto smoke = listed_cases(all.out);
  EXPECT_GT(smoke.size(), 1u);
  EXPECT_EQ(std::count(smoke.begin(), smoke.end(), 9), 0);
  // Nothing in both is an error that names both filters, not an empty run.
  const auto none = run(KNN_BINARY, kConfig + " --case 9 --group smoke");
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_NE(none.out.find("--case 9 --group smoke: no case"), std::string::npos) << none.out;
}

TEST(CliFlags, ListHonoursFiltersAndRejectsUnknownIds) {
  const auto r = run(KNN_BINARY, kConfig + " --list --version v0 --case 8-11");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(lists_version(r.out, "v0")) << r.out;
  EXPECT_FALSE(lists_version(r.out, "v10")) << r.out;
  EXPECT_EQ(listed_cases(r.out), (std::vector<int>{8, 9, 10, 11}));
  const auto bad = run(KNN_BINARY, kConfig + " --list --version v99");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--version v99: no such version"), std::string::npos) << bad.out;
  EXPECT_EQ(run(KNN_BINARY, kConfig + " --list --case 99").code, 2);
}

TEST(CliFlags, VersionRanges) {
  // Every registered version numbered 10 to 12, whatever the build registers (v10 and v12 are CPU trees).
  const auto r = run(KNN_BINARY, kConfig + " --list --version v10-v12");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(lists_version(r.out, "v10"));
  EXPECT_TRUE(lists_version(r.out, "v12"));
  EXPECT_FALSE(lists_version(r.out, "v0"));
  EXPECT_FALSE(lists_version(r.out, "v13"));
  for (const char* bad : {"v12-v10", "v10-", "x1-v3", "v90-v99"}) {
    const auto b = run(KNN_BINARY, kConfig + " --list --version " + bad);
    EXPECT_EQ(b.code, 2) << bad << ": " << b.out;
    EXPECT_NE(b.out.find(std::string("--version ") + bad), std::string::npos) << b.out;
  }
}

TEST(CliFlags, AdhocCaseRunsWithoutAMatrixFile) {
  const std::string json = tmp_path("adhoc.json");
  const auto r = run(KNN_BINARY, kFast + "--k 5 --m 64 --n 1e3 --topk 4 --distribution clusters --version v0,v10 --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& res : j["results"]) {
    EXPECT_EQ(res["status"], "pass") << res;
    EXPECT_EQ(res["case"]["k"], 5);
    EXPECT_EQ(res["case"]["m"], 64);
    EXPECT_EQ(res["case"]["n"], 1000);
    EXPECT_EQ(res["case"]["topk"], 4);
    EXPECT_EQ(res["case"]["distribution"], "clusters");
  }
  const auto self = run(KNN_BINARY, "--list --k 3 --n 50 --self-join");
  ASSERT_EQ(self.code, 0) << self.out;
  EXPECT_NE(self.out.find("self"), std::string::npos) << self.out;
}

// The matrix loader checks an ad-hoc case, and its messages name the flag.
TEST(CliFlags, AdhocCaseErrorsNameTheFlag) {
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"--k 16 --m 1024 --n 0", "--n: 0: expected the reference count n"},
           {"--k 16 --m 1024 --n 1e6x", "--n: \"1e6x\": expected"},
           {"--k 16 --m 1.5 --n 100", "--m: \"1.5\": expected"},
           {"--k 16 --m 10 --n 100 --topk 101", "--topk: 101: expected topk ≤ n = 100"},
           {"--k 16 --m 10 --n 100 --distribution zipf", "--distribution: \"zipf\": expected a distribution"},
           {"--k 16 --m 10 --n 100 --self-join", "--m: 10: expected m = n = 100 or no m"},
           {"--m 10 --n 100", "--k: required"},
           {"--k 3 --n 100", "--m: required"},
           {kConfig + " --k 3 --m 10 --n 100", "a case given by flags replaces the matrix"}}) {
    const auto r = run(KNN_BINARY, "--list " + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(expect), std::string::npos) << args << ": " << r.out;
  }
}

// The README: on a machine without a GPU the GPU versions skip with the reason and the exit code
// stays 0, --devices or not. Ordinals are checked where devices exist.
TEST(CliFlags, DevicesWithoutAGpuSkipsAndExitsZero) {
  const std::string json = tmp_path("devices.json");
  const auto r = run(KNN_BINARY, kConfig + kFast + "--case 0 --devices 0,1 --json " + json);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  if (!j["devices"].empty()) GTEST_SKIP() << "this machine has a GPU: --devices 0,1 selects real devices";
  EXPECT_EQ(r.code, 0) << r.out;
  // Pinned inputs fell back to pageable: the screen says why.
  EXPECT_NE(r.out.find("Host memory: pageable (pinned memory needs a CUDA device, none here: "), std::string::npos) << r.out;
  // CPU versions pass; every other result is a GPU version (v11/v13 are GPU trees) skipping for want of a device.
  int passed = 0;
  for (const auto& res : j["results"]) {
    if (res["family"] == "cpu") EXPECT_EQ(res["status"], "pass") << res["version"];
    if (res["status"] == "pass") ++passed;
    else if (res["family"] == "peer" && res["reason"].get<std::string>().rfind("built without ", 0) == 0) {
      EXPECT_EQ(res["status"], "skip") << res["version"];  // a peer whose library this build lacks (p-torch without libtorch)
    } else {
      EXPECT_EQ(res["status"], "skip") << res["version"];
      EXPECT_NE(res["reason"].get<std::string>().find("CUDA"), std::string::npos) << res["version"] << ": " << res["reason"];
    }
  }
  EXPECT_GE(passed, 3);  // v0, v10, v12
  const auto bad = run(KNN_BINARY, kConfig + kFast + "--case 0 --version v0 --devices 0,x");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--devices 0,x: expected"), std::string::npos) << bad.out;
}
