// Peers are graded, not failed: a peer's answer that fails validation is a measurement with status
// "inexact" (wrong queries, wrong neighbours, recall@topk), and leaves the exit code alone unless
// --strict-peers. knnbench's own versions still fail on any wrong answer (test_cli.cpp: t1).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "grade.hpp"
#include "results_schema.hpp"
#include "validate.hpp"

using knn::testing::run;
using knn::testing::tmp_path;

namespace {

const std::string kAdhoc = " --k 3 --m 40 --n 500 --topk 4 --warmup 0 --min-samples 1 --min-time 0 --max-noise 0 ";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Two queries in 1-D over the references 0, 1, ..., 9: the nearest of 0.1 are 0, 1, 2; of 8.9 are 9, 8, 7.
struct Line {
  std::vector<float> refs, queries{0.1f, 8.9f};
  Line() {
    for (int i = 0; i < 10; ++i) refs.push_back(float(i));
  }
  knn::Problem problem() const { return knn::Problem{1, 2, 10, 3, queries.data(), refs.data(), false}; }
};

}  // namespace

TEST(Grading, CountsWrongQueriesWrongNeighboursAndRecall) {
  Line line;
  const knn::Problem p = line.problem();
  const std::vector<std::int32_t> truth{0, 1, 2, 9, 8, 7};
  EXPECT_TRUE(knn::validate_neighbors(p, truth.data(), truth.data()).pass);
  EXPECT_EQ(knn::validate_neighbors(p, truth.data(), truth.data()).recall(), 1.0);
  // Query 0: its third neighbour 5 instead of 2 (one wrong); query 1 exact.
  const std::vector<std::int32_t> one_wrong{0, 1, 5, 9, 8, 7};
  knn::ValidationReport v = knn::validate_neighbors(p, truth.data(), one_wrong.data());
  EXPECT_FALSE(v.pass);
  EXPECT_EQ(v.wrong_queries, 1);
  EXPECT_EQ(v.wrong_neighbors(), 1);
  EXPECT_DOUBLE_EQ(v.recall(), 5.0 / 6.0);
  // Query 0 answers 0, 3, 4 (two wrong), query 1 repeats 9 (invalid row: 9 and 8 still count as found).
  const std::vector<std::int32_t> worse{0, 3, 4, 9, 9, 8};
  v = knn::validate_neighbors(p, truth.data(), worse.data());
  EXPECT_EQ(v.wrong_queries, 2);
  EXPECT_EQ(v.wrong_neighbors(), 3);
  EXPECT_DOUBLE_EQ(v.recall(), 3.0 / 6.0);
}

TEST(Grading, APeersWrongAnswerIsInexactAnOwnVersionsFails) {
  Line line;
  const knn::Problem p = line.problem();
  const std::vector<std::int32_t> truth{0, 1, 2, 9, 8, 7}, wrong{0, 1, 5, 9, 8, 7};
  const knn::ValidationReport v = knn::validate_neighbors(p, truth.data(), wrong.data());
  knn::Result peer, own;
  peer.family = "peer";
  own.family = "gpu";
  knn::grade(peer, v, false);
  knn::grade(own, v, false);
  EXPECT_EQ(peer.status, knn::Status::inexact);
  EXPECT_TRUE(peer.validated);
  EXPECT_NE(peer.reason.find("1 wrong query"), std::string::npos) << peer.reason;
  EXPECT_EQ(own.status, knn::Status::fail);
  knn::grade(peer, v, true);  // --strict-peers
  EXPECT_EQ(peer.status, knn::Status::fail);
  knn::grade(peer, knn::validate_neighbors(p, truth.data(), truth.data()), false);
  EXPECT_EQ(peer.status, knn::Status::pass);
}

TEST(Grading, InexactPeerEndToEndExitsZeroAndStrictPeersExitsOne) {
  const std::string json = tmp_path("inexact.json"), md = tmp_path("inexact.md"), csv = tmp_path("inexact.csv");
  const auto r = run(KNN_TEST_BINARY, "--version v0,p-test-inexact" + kAdhoc + "--json " + json + " --md " + md + " --csv " + csv);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Inexact:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 inexact (peers), 0 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("! = inexact"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["results"].size(), 2u);
  const auto& res = j["results"][1];
  EXPECT_EQ(res["version"], "p-test-inexact");
  EXPECT_EQ(res["status"], "inexact");
  EXPECT_FALSE(res["stats"]["median_ms"].is_null());  // a measurement: it has a time
  EXPECT_EQ(res["validation"]["status"], "fail");
  EXPECT_EQ(res["validation"]["wrong_queries"], 10);  // queries 0, 4, ..., 36 of 40
  EXPECT_EQ(res["validation"]["wrong_neighbors"], 10);
  EXPECT_DOUBLE_EQ(res["validation"]["recall"].get<double>(), 1.0 - 10.0 / 160.0);
  EXPECT_NE(slurp(md).find("| inexact |"), std::string::npos) << slurp(md);
  EXPECT_NE(slurp(csv).find(",inexact,"), std::string::npos) << slurp(csv);
  // report and compare read it back; compare judges its time and says it is inexact.
  EXPECT_EQ(run(KNN_BINARY, "report " + json + " --md " + tmp_path("again.md")).code, 0);
  const auto c = run(KNN_BINARY, "compare " + json + " " + json);
  EXPECT_NE(c.out.find("p-test-inexact case 0: A inexact (10 of 40 queries wrong"), std::string::npos) << c.out;

  const std::string strict = tmp_path("strict.json");
  const auto s = run(KNN_TEST_BINARY, "--version v0,p-test-inexact --strict-peers" + kAdhoc + "--json " + strict);
  EXPECT_EQ(s.code, 1) << s.out;
  const auto js = nlohmann::json::parse(std::ifstream(strict));
  EXPECT_EQ(js["results"][1]["status"], "fail");
}

TEST(Grading, ReaderRefusesInexactThatContradictsItself) {
  const std::string json = tmp_path("inexact-src.json");
  ASSERT_EQ(run(KNN_TEST_BINARY, "--version p-test-inexact --quiet" + kAdhoc + "--json " + json).code, 0);
  const auto good = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(good["results"][0]["status"], "inexact");
  auto write = [](const nlohmann::json& j, const std::string& name) {
    const std::string path = tmp_path(name);
    std::ofstream(path) << j.dump();
    return path;
  };
  nlohmann::json own = good;
  own["results"][0]["family"] = "cpu";
  auto r = run(KNN_BINARY, "report " + write(own, "own.json") + " --md " + tmp_path("own.md"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("only a peer is graded inexact"), std::string::npos) << r.out;
  nlohmann::json passed = good;
  passed["results"][0]["validation"]["status"] = "pass";
  r = run(KNN_BINARY, "report " + write(passed, "passed.json") + " --md " + tmp_path("passed.md"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("its validation did not fail"), std::string::npos) << r.out;
}
