// End-to-end tests of the knnbench binary: exit codes, messages, results files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace {

using knn::testing::run;
using knn::testing::tmp_path;

const std::string kConfig = std::string("--config ") + KNN_SOURCE_DIR + "/configs/default.json";
const std::string kFast = " --warmup 0 --min-samples 1 --min-time 0 --max-noise 0 ";

}  // namespace

TEST(Cli, UnknownVersionExits2AndListsValidOnes) {
  const auto r = run(KNN_BINARY, kConfig + " --version v99");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("v99"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("registered: v0"), std::string::npos) << r.out;
}

TEST(Cli, UnknownCaseExits2AndListsValidIds) {
  const auto r = run(KNN_BINARY, kConfig + " --case 12");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("valid ids: 0, 1, 2"), std::string::npos) << r.out;
  EXPECT_EQ(run(KNN_BINARY, kConfig + " --case 3-x").code, 2);
  EXPECT_EQ(run(KNN_BINARY, kConfig + " --group nope").code, 2);
}

TEST(Cli, BadFlagsExit2) {
  EXPECT_EQ(run(KNN_BINARY, "--no-such-flag").code, 2);
  EXPECT_EQ(run(KNN_BINARY, kConfig + " --host-memory swap").code, 2);
  EXPECT_EQ(run(KNN_BINARY, kConfig + " --min-samples 0").code, 2);
  EXPECT_EQ(run(KNN_BINARY, kConfig + " --max-time -1").code, 2);
  EXPECT_EQ(run(KNN_BINARY, kConfig + " --devices 9x").code, 2);
}

TEST(Cli, BadMatrixExits2NamingFileAndField) {
  const std::string path = tmp_path("bad.json");
  std::ofstream(path) << R"({"schema_version":1,"cases":[{"id":0,"k":3,"m":1,"n":0}]})";
  const auto r = run(KNN_BINARY, "--config " + path);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(path + ": /cases/0/n: 0"), std::string::npos) << r.out;
  EXPECT_EQ(run(KNN_BINARY, "--config /nonexistent.json").code, 2);
}

TEST(Cli, HelpAndListExit0) {
  const auto h = run(KNN_BINARY, "--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--version"), std::string::npos);
  const auto l = run(KNN_BINARY, kConfig + " --list");
  EXPECT_EQ(l.code, 0) << l.out;
  EXPECT_NE(l.out.find("v0"), std::string::npos);
  EXPECT_NE(l.out.find("1048576"), std::string::npos);
}

TEST(Cli, V0Case6RunsAndWritesValidJson) {
  const std::string json = tmp_path("v0c6.json"), md = tmp_path("v0c6.md"), csv = tmp_path("v0c6.csv");
  const auto r = run(KNN_BINARY, kConfig + kFast + "--version v0 --case 6 --json " + json + " --md " + md + " --csv " + csv);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("Devices:"), std::string::npos);
  EXPECT_NE(r.out.find("Pass: [1/1] case  6"), std::string::npos) << r.out;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_TRUE(j["meta"]["complete"].get<bool>());
  ASSERT_EQ(j["results"].size(), 1u);
  const auto& res = j["results"][0];
  EXPECT_EQ(res["version"], "v0");
  EXPECT_EQ(res["status"], "pass");
  EXPECT_EQ(res["validation"]["status"], "pass");
  EXPECT_EQ(res["case"]["n"], 65536);
  EXPECT_EQ(res["case"]["checksums"]["queries"].get<std::string>().size(), 16u);
  EXPECT_GT(res["stats"]["median_ms"].get<double>(), 0.0);
  EXPECT_TRUE(std::filesystem::file_size(md) > 100);
  EXPECT_TRUE(std::filesystem::file_size(csv) > 50);
}

TEST(Cli, SmokeGroupSkipsGpuVersionsWithoutADevice) {
  const std::string json = tmp_path("smoke.json");
  const auto r = run(KNN_BINARY, kConfig + kFast + "--group smoke --json " + json);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  const bool no_gpu = j["devices"].empty();
  for (const auto& res : j["results"]) {
    // The GPU families; a GPU peer (p-faiss-gpu) skips too, with "no CUDA device" or its build's reason.
    if (no_gpu && res["family"] != "cpu" && res["family"] != "tree" && res["family"] != "peer") {
      EXPECT_EQ(res["status"], "skip") << res["version"];
      EXPECT_EQ(res["reason"], "no CUDA device") << res["version"];
    }
    if (res["status"] == "fail") ADD_FAILURE() << res["version"] << " case " << res["case"]["id"] << ": " << res["reason"];
  }
  EXPECT_EQ(r.code, 0) << r.out;
  if (no_gpu) {
    EXPECT_NE(r.out.find("Devices:\n  none ("), std::string::npos) << r.out;  // "no CUDA device (...)" or "built without CUDA"
    EXPECT_FALSE(j["device_note"].get<std::string>().empty());
  }
}

TEST(Cli, SameSeedSameChecksumsAcrossRuns) {
  const std::string a = tmp_path("a.json"), b = tmp_path("b.json");
  ASSERT_EQ(run(KNN_BINARY, kConfig + kFast + "--version v0 --case 5 --json " + a + " --quiet").code, 0);
  ASSERT_EQ(run(KNN_BINARY, kConfig + kFast + "--version v0 --case 5 --seed 99 --json " + b + " --quiet").code, 0);
  const auto ja = nlohmann::json::parse(std::ifstream(a)), jb = nlohmann::json::parse(std::ifstream(b));
  EXPECT_NE(ja["results"][0]["case"]["checksums"], jb["results"][0]["case"]["checksums"]);
  const std::string c = tmp_path("c.json");
  ASSERT_EQ(run(KNN_BINARY, kConfig + kFast + "--version v0 --case 5 --json " + c + " --quiet").code, 0);
  const auto jc = nlohmann::json::parse(std::ifstream(c));
  EXPECT_EQ(ja["results"][0]["case"]["checksums"], jc["results"][0]["case"]["checksums"]);
}

TEST(Cli, WrongVersionFailsValidationAndExits1) {
  const std::string json = tmp_path("wrong.json");
  const auto r = run(KNN_TEST_BINARY, kConfig + kFast + "--version v0,t1 --case 5 --json " + json);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("Fail: [2/2] case  5"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["status"], "pass");  // the run went on past the failure
  EXPECT_EQ(j["results"][1]["status"], "fail");
  EXPECT_GT(j["results"][1]["validation"]["mismatches"].get<std::int64_t>(), 0);
}

TEST(Cli, ReportRewritesAResultsFileAsMarkdownAndCsv) {
  const std::string json = tmp_path("rep.json"), md = tmp_path("rep.md"), csv = tmp_path("rep.csv");
  ASSERT_EQ(run(KNN_BINARY, kConfig + kFast + "--version v0,v10 --case 5 --quiet --json " + json).code, 0);
  const auto r = run(KNN_BINARY, "report " + json + " --md " + md + " --csv " + csv);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(md);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("| v0 |"), std::string::npos) << text;
  EXPECT_NE(text.find("Trees against the fastest brute force"), std::string::npos) << text;
  EXPECT_GT(std::filesystem::file_size(csv), 50u);
  EXPECT_EQ(run(KNN_BINARY, "report /nonexistent.json --md " + md).code, 2);
  EXPECT_EQ(run(KNN_BINARY, "report " + md + " --md " + md).code, 2);  // not JSON
}

// --dump-answers: v0's answer on a self-join case as two .npy files whose header, shape and rows
// agree with the reference loop; an unusable folder is exit 2 before anything is measured.
TEST(Cli, DumpAnswersWritesNpyFilesAUserCanCheck) {
  const std::string matrix = tmp_path("sj.json"), dir = tmp_path("answers");
  std::ofstream(matrix) << R"({"schema_version": 1, "cases": [{"id": 5, "k": 3, "n": 40, "topk": 4, "self_join": true,
    "distribution": "integers", "max": 4}]})";
  const auto r = run(KNN_BINARY, "--config " + matrix + " --version v0" + kFast + " --json " + tmp_path("sj-out.json") +
                                      " --dump-answers " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream idx(dir + "/case5-v0-indices.npy", std::ios::binary), dist(dir + "/case5-v0-distances.npy", std::ios::binary);
  ASSERT_TRUE(idx && dist) << r.out;
  std::string head(10, '\0');
  idx.read(head.data(), 10);
  ASSERT_EQ(head.substr(0, 6), "\x93NUMPY");
  const std::size_t hlen = std::size_t(static_cast<unsigned char>(head[8])) | std::size_t(static_cast<unsigned char>(head[9])) << 8;
  EXPECT_EQ((10 + hlen) % 64, 0u);
  std::string header(hlen, '\0');
  idx.read(header.data(), std::streamsize(hlen));
  EXPECT_NE(header.find("'descr': '<i4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (40, 4)"), std::string::npos) << header;
  std::vector<std::int32_t> rows(40 * 4);
  idx.read(reinterpret_cast<char*>(rows.data()), std::streamsize(rows.size() * 4));
  ASSERT_TRUE(idx) << "the indices file is shorter than its shape";
  for (int q = 0; q < 40; ++q)
    for (int j = 0; j < 4; ++j) {
      const std::int32_t i = rows[std::size_t(q) * 4 + j];
      EXPECT_TRUE(i >= 0 && i < 40 && i != q) << "point " << q << " slot " << j << ": " << i;
    }
  const auto bad = run(KNN_BINARY, "--config " + matrix + " --version v0" + kFast + " --dump-answers /proc/no-such/dir");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--dump-answers /proc/no-such/dir"), std::string::npos) << bad.out;
}

// "-" is standard output for report's --md; a report that would overwrite its own input is refused.
TEST(Cli, ReportToStdoutAndNeverOverItsInput) {
  const std::string json = tmp_path("stdout-run.json");
  ASSERT_EQ(run(KNN_BINARY, kConfig + " --case 0 --version v0" + kFast + " --json " + json).code, 0);
  const auto md = run(KNN_BINARY, "report " + json + " --md -");
  EXPECT_EQ(md.code, 0) << md.out;
  EXPECT_NE(md.out.find("| v0 "), std::string::npos) << md.out;
  EXPECT_FALSE(std::filesystem::exists("-")) << "a file named '-' was created";
  const auto same = run(KNN_BINARY, "report " + json + " --md " + json);
  EXPECT_EQ(same.code, 2) << same.out;
  EXPECT_NE(same.out.find("are the same file"), std::string::npos) << same.out;
  std::ifstream in(json);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);  // no exceptions: discarded on error
  EXPECT_FALSE(doc.is_discarded()) << "the input was overwritten";
  EXPECT_TRUE(doc.contains("results")) << "the input was overwritten";
}

// Values that used to be clamped or taken as "everything", and a matrix path that is no file: each
// is exit 2 naming the flag (or file) and the value.
TEST(Cli, ClampedOrEmptyValuesAndNonFilesAreRefused) {
  struct Bad {
    std::string args, expect;
  };
  const std::string fifo = tmp_path("matrix.fifo");
  std::filesystem::remove(fifo);
  const bool have_fifo = ::mkfifo(fifo.c_str(), 0600) == 0;
  std::vector<Bad> bad = {
      {"--seed -1", "--seed -1: expected a whole number"},
      {"--seed 18446744073709551616", "--seed 18446744073709551616: expected a whole number"},
      {"--seed 1e23", "--seed 1e23: expected a whole number"},
      {"--validate-queries -1", "--validate-queries -1"},
      {"--case ''", "--case '': expected ids"},
      {"--version ''", "--version '': expected ids"},
      {"--min-time inf", "--min-time inf"},
      {"--max-time inf", "--max-time inf"},
  };
  for (const Bad& b : bad) {
    const auto r = run(KNN_BINARY, kConfig + " " + b.args);
    EXPECT_EQ(r.code, 2) << b.args << ": " << r.out;
    EXPECT_NE(r.out.find(b.expect), std::string::npos) << b.args << ": " << r.out;
  }
  const auto dir = run(KNN_BINARY, "--config " + std::filesystem::temp_directory_path().string());
  EXPECT_EQ(dir.code, 2) << dir.out;
  EXPECT_NE(dir.out.find("is a directory"), std::string::npos) << dir.out;
  if (have_fifo) {  // must not wait for a writer
    const auto f = run("timeout 10 " + std::string(KNN_BINARY), "--config " + fifo);
    EXPECT_EQ(f.code, 2) << f.out;
    EXPECT_NE(f.out.find("not a regular file"), std::string::npos) << f.out;
  }
  // The largest seed is a seed.
  EXPECT_EQ(run(KNN_BINARY, kConfig + " --case 0 --version v0" + kFast + " --seed 18446744073709551615 --json " + tmp_path("seed.json")).code, 0);
}

// A huge --warmup shares the --max-time budget instead of running a billion calls.
TEST(Cli, WarmupIsBoundedByMaxTime) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run(KNN_BINARY, kConfig + " --case 0 --version v0 --warmup 1000000000 --max-time 0.5 --min-time 0 --max-noise 0 --json " +
                                     tmp_path("warm.json"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0) << r.out;
}
