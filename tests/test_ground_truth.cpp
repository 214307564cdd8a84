// What an answer was validated against (ValidationReport::ground_truth) survives a results file:
// written, read back, and said by `report` (markdown, CSV), the screen's legend and `compare`.
// Files without the field (written before it existed) read as v0 reference.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "compare.hpp"
#include "report.hpp"
#include "results_schema.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// A passing, validated result of case `id` with fresh random samples.
knn::Result validated(std::mt19937& rng, int id, const std::string& version, const std::string& truth) {
  knn::Result r;
  r.problem_case = {id, 3, 5, 40, 3, knn::Distribution::uniform, 7, {}};
  r.query_checksum = fmt::format("{:016x}", 0x51ed27u * unsigned(id + 1));
  r.reference_checksum = fmt::format("{:016x}", 0x2545f491u * unsigned(id + 1));
  r.version = version;
  r.family = "cpu";
  r.status = knn::Status::pass;
  std::uniform_real_distribution<double> ms(1.0, 1.2);
  for (int i = 0; i < 12; ++i) r.samples_ms.push_back(ms(rng));
  r.stats = knn::summarize(r.samples_ms);
  r.validated = true;
  r.validation.checked = 15;
  r.validation.queries_checked = 5;
  r.validation.ground_truth = truth;
  return r;
}

knn::ResultsDocument round_trip(const std::vector<knn::Result>& results, const std::string& file) {
  knn::RunInfo info;
  info.complete = true;
  return knn::read_results_document(json::parse(knn::results_to_json(info, results).dump()), file);
}

std::string slurp(const fs::path& p) {
  std::stringstream s;
  s << std::ifstream(p).rdbuf();
  return s.str();
}

// The cells of the CSV column `name`, one per row.
std::vector<std::string> csv_column(const std::string& csv, const std::string& name) {
  std::stringstream in(csv);
  std::string line, cell;
  std::getline(in, line);
  std::stringstream head(line);
  int at = -1;
  for (int i = 0; std::getline(head, cell, ','); ++i)
    if (cell == name) at = i;
  std::vector<std::string> out;
  if (at < 0) return out;
  while (std::getline(in, line)) {
    std::stringstream row(line);
    for (int i = 0; std::getline(row, cell, ','); ++i)
      if (i == at) out.push_back(cell);
  }
  return out;
}

const std::string kFileTruth = "v0 reference + neighbors of a.hdf5";

}  // namespace

TEST(GroundTruth, ReadBackAndSaidByTheMarkdownAndCsvReports) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  // Case 7: two versions against the file's neighbours, one against v0 alone (it failed there first);
  // case 8: v0 alone, the default, said nowhere.
  std::vector<knn::Result> rs{validated(rng, 7, "v0", kFileTruth), validated(rng, 7, "v10", kFileTruth), validated(rng, 7, "v12", "v0 reference"),
                              validated(rng, 8, "v0", "v0 reference")};
  const knn::ResultsDocument doc = round_trip(rs, "gt.json");
  ASSERT_EQ(doc.results.size(), rs.size());
  for (std::size_t i = 0; i < rs.size(); ++i) EXPECT_EQ(doc.results[i].validation.ground_truth, rs[i].validation.ground_truth) << i;

  const auto dir = fs::temp_directory_path() / fmt::format("knn_ground_truth_{}_{}", ::getpid(), seed);
  fs::create_directories(dir);
  knn::make_markdown_reporter((dir / "r.md").string())->end(doc.info, doc.results);
  knn::make_csv_reporter((dir / "r.csv").string())->end(doc.info, doc.results);
  const std::string md = slurp(dir / "r.md"), csv = slurp(dir / "r.csv");
  fs::remove_all(dir);
  EXPECT_NE(md.find("Validated against v0 reference + neighbors of a.hdf5: case 7 (v0, v10).\n"), std::string::npos) << md;
  EXPECT_EQ(md.find("Validated against v0 reference:"), std::string::npos) << "plain v0 reference needs no line: " << md;
  EXPECT_EQ(md.find("Validated against"), md.rfind("Validated against")) << md;
  EXPECT_EQ(csv_column(csv, "ground_truth"), (std::vector<std::string>{kFileTruth, kFileTruth, "v0 reference", "v0 reference"})) << csv;
  // The same legend under the screen's table; a sampled v0 is said too, with its count.
  rs[3].validation.ground_truth = "v0 reference (2 of 5 queries)";
  EXPECT_EQ(knn::summary_legend(round_trip(rs, "gt.json").results),
            "Validated against v0 reference (2 of 5 queries): case 8.\nValidated against v0 reference + neighbors of a.hdf5: case 7 (v0, v10).\n");
}

TEST(GroundTruth, FilesWithoutTheFieldReadAsV0AndABadOneIsRefused) {
  std::mt19937 rng(std::random_device{}());
  knn::RunInfo info;
  json doc = json::parse(knn::results_to_json(info, {validated(rng, 7, "v10", kFileTruth)}).dump());
  ASSERT_EQ(doc["results"][0]["validation"]["ground_truth"], kFileTruth);
  doc["results"][0]["validation"].erase("ground_truth");
  const knn::ResultsDocument old = knn::read_results_document(doc, "old.json");
  EXPECT_EQ(old.results[0].validation.ground_truth, "v0 reference");
  EXPECT_TRUE(knn::ground_truth_remark(old.results[0]).empty());
  EXPECT_EQ(knn::summary_legend(old.results), "");
  for (const json& bad : {json(""), json(3), json::array({kFileTruth})}) {
    doc["results"][0]["validation"]["ground_truth"] = bad;
    try {
      knn::read_results_document(doc, "bad.json");
      ADD_FAILURE() << bad.dump() << " accepted";
    } catch (const knn::SchemaError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json: results[0].validation.ground_truth: "), std::string::npos) << e.what();
    }
  }
}

TEST(GroundTruth, CompareSaysWhenTheSidesWereValidatedAgainstDifferentTruths) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const std::vector<knn::Result> a{validated(rng, 7, "v0", "v0 reference"), validated(rng, 7, "v10", "v0 reference"),
                                   validated(rng, 8, "v10", "v0 reference")};
  std::vector<knn::Result> b{validated(rng, 7, "v0", kFileTruth), validated(rng, 7, "v10", kFileTruth), validated(rng, 8, "v10", "v0 reference")};
  knn::CompareOptions opts;
  const knn::CompareReport rep = knn::compare_runs(round_trip(a, "A.json"), round_trip(b, "B.json"), opts);
  ASSERT_EQ(rep.pairs.size(), 3u);
  const std::string note =
      "Validated against different ground truths: A against v0 reference, B against v0 reference + neighbors of a.hdf5, for case 7 (v0, v10).";
  ASSERT_EQ(std::count_if(rep.notes.begin(), rep.notes.end(), [](const std::string& n) { return n.find("ground truths") != std::string::npos; }), 1)
      << fmt::format("{}", fmt::join(rep.notes, "\n"));
  EXPECT_NE(knn::format_compare(rep, false).find(note.substr(0, note.size() - 1)), std::string::npos) << knn::format_compare(rep, false);
  EXPECT_NE(knn::format_compare(rep, true).find("case 7 (v0, v10)"), std::string::npos);
  // The same truths on both sides, or one side not validated: nothing to say.
  b[0].validation.ground_truth = b[1].validation.ground_truth = "v0 reference";
  b[2].validated = false;
  const knn::CompareReport same = knn::compare_runs(round_trip(a, "A.json"), round_trip(b, "B.json"), opts);
  for (const auto& n : same.notes) EXPECT_EQ(n.find("ground truth"), std::string::npos) << n;
}
