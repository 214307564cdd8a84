// The results schema's one reader and writer (results_schema.hpp), and the one text-table routine.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "report.hpp"
#include "results_schema.hpp"
#include "text_table.hpp"

namespace {

using json = nlohmann::json;

std::vector<double> random_samples(std::mt19937& rng, int count) {
  std::uniform_real_distribution<double> d(0.5, 50.0);
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(d(rng));
  return v;
}

knn::Result random_result(std::mt19937& rng, knn::Status status) {
  knn::Result r;
  std::uniform_int_distribution<int> size(1, 5000);
  // topk ≤ n, as the reader requires: n drawn from 1..5000 alone fell under a topk of 1..32 for about
  // 1 result in 300 (2 % of runs of this file's tests once the reader checked it).
  const int id = size(rng), dim = size(rng), m = size(rng), topk = 1 + size(rng) % 32, n = topk - 1 + size(rng);
  r.problem_case = {id, dim, m, n, topk, knn::Distribution::clusters, std::uint64_t(rng()), {"ta"}};
  r.query_checksum = fmt::format("{:016x}", rng());
  r.reference_checksum = fmt::format("{:016x}", rng());
  r.version = fmt::format("v{}", size(rng) % 14);
  r.title = "a title";
  r.family = "gpu";
  r.status = status;
  if (status != knn::Status::pass) r.reason = "a reason";
  r.path = "a path";
  r.devices_used = {0, 2};
  r.host_memory = knn::HostMemory::pinned;
  if (status != knn::Status::skip) {
    r.samples_ms = random_samples(rng, 3 + size(rng) % 40);
    r.stats = knn::summarize(r.samples_ms);
    r.validated = true;
    r.validation.pass = status == knn::Status::pass;
    r.validation.checked = size(rng);
    r.validation.ties_accepted = size(rng);
    r.validation.max_rel_error = 1e-7 * size(rng);
    r.phase_samples_ms["kernel"] = random_samples(rng, 4);
    r.device_phase_samples_ms[2]["h2d"] = random_samples(rng, 3);
  }
  return r;
}

unsigned fresh_seed() { return std::random_device{}(); }

// The message a reader throws for `doc`, or "" when it reads.
std::string read_error(const json& doc, const std::string& file = "f.json") {
  try {
    knn::read_results_document(doc, file);
  } catch (const knn::SchemaError& e) {
    return e.what();
  }
  return "";
}

json small_document(std::mt19937& rng) {
  knn::RunInfo info;
  info.complete = true;
  std::vector<knn::Result> rs{random_result(rng, knn::Status::pass), random_result(rng, knn::Status::skip), random_result(rng, knn::Status::fail)};
  return json::parse(knn::results_to_json(info, rs).dump());
}

}  // namespace

TEST(ResultsSchema, ResultsReadBackAsWritten) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  for (auto status : {knn::Status::pass, knn::Status::fail, knn::Status::skip}) {
    const knn::Result r = random_result(rng, status);
    const knn::Result back = knn::result_from_json(json::parse(knn::result_to_json(r).dump()), "x.json", 0);
    EXPECT_EQ(back.problem_case.id, r.problem_case.id);
    EXPECT_EQ(back.problem_case.seed, r.problem_case.seed);
    EXPECT_EQ(back.problem_case.distribution, r.problem_case.distribution);
    EXPECT_EQ(back.problem_case.groups, r.problem_case.groups);
    EXPECT_EQ(back.query_checksum, r.query_checksum);
    EXPECT_EQ(back.version, r.version);
    EXPECT_EQ(back.status, r.status);
    EXPECT_EQ(back.reason, r.reason);
    EXPECT_EQ(back.devices_used, r.devices_used);
    EXPECT_EQ(back.host_memory, r.host_memory);
    EXPECT_EQ(back.samples_ms, r.samples_ms);
    EXPECT_EQ(back.stats.samples, r.stats.samples);
    if (status == knn::Status::pass) {
      EXPECT_EQ(back.stats.median, r.stats.median);
      EXPECT_EQ(back.stats.noise_pct, r.stats.noise_pct);
      EXPECT_EQ(back.stats.median_noise_pct, r.stats.median_noise_pct);
      EXPECT_EQ(back.stats.median_ci_low, r.stats.median_ci_low);
    } else {  // no time: null, read back as NaN, never 0
      EXPECT_TRUE(std::isnan(back.stats.median));
      EXPECT_TRUE(std::isnan(back.stats.noise_pct));
      EXPECT_TRUE(std::isnan(back.stats.median_noise_pct));
    }
    EXPECT_EQ(back.validated, r.validated);
    EXPECT_EQ(back.validation.ties_accepted, r.validation.ties_accepted);
    EXPECT_EQ(back.validation.max_rel_error, r.validation.max_rel_error);
    EXPECT_EQ(back.phase_samples_ms, r.phase_samples_ms);
    EXPECT_EQ(back.device_phase_samples_ms, r.device_phase_samples_ms);
  }
}

TEST(ResultsSchema, BadFieldsNameTheFileTheResultAndTheField) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json good = small_document(rng);
  ASSERT_EQ(read_error(good), "");
  struct Breakage {
    std::string expect;
    void (*apply)(json&);
  };
  const std::vector<Breakage> cases{
      {"f.json: results[0].stats.median_ms: expected a number, found string", [](json& d) { d["results"][0]["stats"]["median_ms"] = "1.0"; }},
      {"f.json: results[0].stats: missing", [](json& d) { d["results"][0].erase("stats"); }},
      {"f.json: results[1].status: \"maybe\", expected pass, fail, skip or inexact", [](json& d) { d["results"][1]["status"] = "maybe"; }},
      {"f.json: results[2].case.distribution: \"gauss\", expected uniform, clusters, duplicates or integers",
       [](json& d) { d["results"][2]["case"]["distribution"] = "gauss"; }},
      {"f.json: results[2].case.checksums.queries: missing", [](json& d) { d["results"][2]["case"]["checksums"].erase("queries"); }},
      {"f.json: results[2].samples_ms: expected numbers, found string", [](json& d) { d["results"][2]["samples_ms"][1] = "x"; }},
      {"f.json: results[2].validation.status: \"maybe\", expected pass, fail or off", [](json& d) { d["results"][2]["validation"]["status"] = "maybe"; }},
      {"f.json: results[0].devices_used: expected an array, found number", [](json& d) { d["results"][0]["devices_used"] = 1; }},
      {"f.json: results[0].title: expected a string, found number", [](json& d) { d["results"][0]["title"] = 3; }},
      {"f.json: results[1]: expected an object, found array", [](json& d) { d["results"][1] = json::array(); }},
      {"f.json: schema_version 3, this knnbench reads 1 to 2", [](json& d) { d["schema_version"] = 3; }},
      {"f.json: (top level).results: missing", [](json& d) { d.erase("results"); }},
  };
  for (const auto& c : cases) {
    json bad = good;
    c.apply(bad);
    EXPECT_EQ(read_error(bad), c.expect);
  }
  // The one-result form, as --isolate uses it, names "result".
  json r = good["results"][0];
  r["case"].erase("seed");
  try {
    knn::result_from_json(r);
    FAIL() << "a result without a seed read";
  } catch (const knn::SchemaError& e) {
    EXPECT_EQ(std::string(e.what()), "result.case.seed: missing");
  }
}

TEST(ResultsSchema, HeaderFieldsAreReadLeniently) {
  std::mt19937 rng(fresh_seed());
  json doc = small_document(rng);
  doc.erase("host");
  doc["meta"].erase("complete");
  doc["devices"] = json::array({{{"name", "NVIDIA H100"}, {"compute_capability", "9.0"}, {"sm_count", 132}}});
  const auto read = knn::read_results_document(doc, "f.json");
  EXPECT_TRUE(read.info.complete);  // files from before the flag were complete
  EXPECT_EQ(read.info.host.cores, 0);
  ASSERT_EQ(read.info.devices.size(), 1u);
  EXPECT_EQ(read.info.devices[0].cc_major, 9);
  EXPECT_EQ(read.info.devices[0].sm_count, 132);
  EXPECT_EQ(read.results.size(), 3u);
}

// What results/ holds was written by earlier builds: every file must still read.
TEST(ResultsSchema, EveryCommittedResultsFileReads) {
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(KNN_SOURCE_DIR) + "/results")) {
    const std::string name = e.path().filename().string();
    const bool gz = name.size() > 8 && name.compare(name.size() - 8, 8, ".json.gz") == 0;
    if (e.path().extension() != ".json" && !gz) continue;
    if (name.find(".ab.json") != std::string::npos) {  // `knnbench ab --json`: its own report, not a results file
      gzFile in = gzopen(e.path().c_str(), "rb");  // reads plain files as they are too
      ASSERT_NE(in, nullptr) << e.path();
      std::string text;
      char buf[1 << 16];
      for (int got; (got = gzread(in, buf, sizeof buf)) > 0;) text.append(buf, std::size_t(got));
      gzclose(in);
      const auto ab = nlohmann::json::parse(text);
      EXPECT_EQ(ab.value("tool", ""), "knnbench ab") << e.path();
      EXPECT_FALSE(ab["rows"].empty()) << e.path();
      continue;
    }
    ++files;
    const auto doc = knn::read_results_file(e.path().string());
    EXPECT_FALSE(doc.info.started_utc.empty()) << e.path();
    for (const auto& r : doc.results)
      if (r.status == knn::Status::pass) {
        EXPECT_GT(r.stats.median, 0) << e.path() << " " << r.version;
      }
  }
  EXPECT_GT(files, 0);
}

// A gzipped results file reads as the plain one; a cut one names the file.
TEST(ResultsSchema, GzippedFilesReadAsPlainOnes) {
  std::mt19937 rng(fresh_seed());
  const std::string text = small_document(rng).dump();
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("knn_schema_gz_{}", fresh_seed());
  std::filesystem::create_directories(dir);
  const std::string plain = (dir / "r.json").string(), packed = (dir / "r.json.gz").string(), cut = (dir / "cut.json.gz").string();
  std::ofstream(plain) << text;
  gzFile out = gzopen(packed.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
  const auto a = knn::read_results_file(plain), b = knn::read_results_file(packed);
  ASSERT_EQ(a.results.size(), b.results.size());
  ASSERT_GT(a.results.size(), 0u);
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    EXPECT_EQ(a.results[i].version, b.results[i].version);
    EXPECT_EQ(a.results[i].status, b.results[i].status);
    if (a.results[i].status == knn::Status::pass) EXPECT_EQ(a.results[i].stats.median, b.results[i].stats.median);
  }
  EXPECT_EQ(a.info.started_utc, b.info.started_utc);
  // The gzip stream cut in half: zlib reports it and the message names the file.
  std::string bytes;
  {
    std::ifstream in(packed, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  try {
    knn::read_results_file(cut);
    ADD_FAILURE() << "a cut gzip file read";
  } catch (const knn::SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.json.gz: read error"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(ResultsSchema, FileProblemsNameTheFile) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("knn_schema_{}", fresh_seed());
  std::filesystem::create_directories(dir);
  const std::string broken = (dir / "broken.json").string();
  std::ofstream(broken) << "{\"schema_version\": 1, ";
  for (const auto& [path, expect] : std::vector<std::pair<std::string, std::string>>{
           {(dir / "none.json").string(), "none.json: no such file"}, {broken, "broken.json: not valid JSON"}, {dir.string(), "is a directory"}}) {
    try {
      knn::read_results_file(path);
      ADD_FAILURE() << path << " read";
    } catch (const knn::SchemaError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------- text tables

TEST(TextTable, ColumnsAlignAndTrailingBlanksGo) {
  const knn::TableRows rows{{"version", "case 0", "x"}, {"v10", "1.5", ""}, {"v2", "123.456", "long cell"}};
  EXPECT_EQ(knn::text_table(rows, knn::label_then_numbers(3)),
            "version   case 0          x\n"
            "v10          1.5\n"
            "v2       123.456  long cell\n");
  EXPECT_EQ(knn::text_table(rows, {knn::Align::left, knn::Align::left, knn::Align::left}),
            "version  case 0   x\n"
            "v10      1.5\n"
            "v2       123.456  long cell\n");
}

TEST(TextTable, MarkdownRuleFollowsTheAlignmentAndPipesAreEscaped) {
  const knn::TableRows rows{{"a", "b"}, {"x|y", "2"}};
  EXPECT_EQ(knn::markdown_table(rows, {knn::Align::left, knn::Align::right}), "| a | b |\n| --- | ---: |\n| x\\|y | 2 |\n");
  EXPECT_EQ(knn::markdown_table(rows, {}), "| a | b |\n| --- | --- |\n| x\\|y | 2 |\n");
}

// ---------------------------------------------------------------- honest records

TEST(ResultsSchema, MeasurementRemarksReadBackAndOldFilesDoWithout) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  knn::Result r = random_result(rng, knn::Status::pass);
  r.calls_per_sample = 16;
  r.noise_target_missed = true;
  r.clocks = {1980, 1755, "none", "sw_power_cap"};
  json j = json::parse(knn::result_to_json(r).dump());
  const knn::Result back = knn::result_from_json(j, "x.json", 0);
  EXPECT_EQ(back.calls_per_sample, 16);
  EXPECT_TRUE(back.noise_target_missed);
  EXPECT_FALSE(back.interrupted);
  EXPECT_EQ(back.clocks.sm_clock_mhz_after, 1755);
  EXPECT_EQ(back.clocks.throttle_after, "sw_power_cap");
  EXPECT_TRUE(back.clocks.changed());
  // A file from before these fields: defaults, and the robust noise computed from the raw samples.
  for (const char* key : {"calls_per_sample", "noise_target_missed", "interrupted", "clocks"}) j.erase(key);
  j["stats"].erase("median_noise_pct");
  j["stats"].erase("median_ci_ms");
  const knn::Result old = knn::result_from_json(j, "x.json", 0);
  EXPECT_EQ(old.calls_per_sample, 1);
  EXPECT_FALSE(old.noise_target_missed);
  EXPECT_FALSE(old.clocks.recorded());
  EXPECT_EQ(old.stats.median_noise_pct, knn::summarize(r.samples_ms).median_noise_pct);
  // Without raw samples it cannot be known: NaN, never a guess.
  j["samples_ms"] = json::array();
  EXPECT_TRUE(std::isnan(knn::result_from_json(j, "x.json", 0).stats.median_noise_pct));
  j["calls_per_sample"] = 0;
  EXPECT_THROW(knn::result_from_json(j, "x.json", 0), knn::SchemaError);
}

TEST(Reports, ResultsWithoutATimeHaveNullsAndEmptyCellsNeverZero) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  knn::RunInfo info;
  std::vector<knn::Result> rs{random_result(rng, knn::Status::skip), random_result(rng, knn::Status::fail),
                              random_result(rng, knn::Status::pass)};
  rs[1].interrupted = true;
  rs[2].noise_target_missed = true;
  const json doc = json::parse(knn::results_to_json(info, rs).dump());
  for (int i : {0, 1})
    for (const char* key : {"median_ms", "min_ms", "mean_ms", "noise_pct", "median_noise_pct"})
      EXPECT_TRUE(doc["results"][i]["stats"][key].is_null()) << i << " " << key;
  EXPECT_FALSE(doc["results"][2]["stats"]["median_ms"].is_null());

  const auto dir = std::filesystem::temp_directory_path() / fmt::format("knn_reports_{}", seed);
  const std::string csv = (dir / "r.csv").string(), md = (dir / "r.md").string();
  const auto read = knn::read_results_document(doc, "r.json");
  knn::make_csv_reporter(csv)->end(read.info, read.results);
  knn::make_markdown_reporter(md)->end(read.info, read.results);
  std::ifstream csv_in(csv);
  std::string header, line;
  std::getline(csv_in, header);
  const auto column = [&header](const std::string& name) {
    std::stringstream ss(header);
    std::string cell;
    for (int i = 0; std::getline(ss, cell, ','); ++i)
      if (cell == name) return i;
    return -1;
  };
  const int median = column("median_ms"), missed = column("noise_target_missed"), interrupted = column("interrupted");
  ASSERT_GE(median, 0);
  ASSERT_GE(missed, 0);
  for (int row = 0; std::getline(csv_in, line); ++row) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    ASSERT_GT(int(cells.size()), interrupted) << line;
    EXPECT_EQ(cells[std::size_t(median)].empty(), row < 2) << line;
    EXPECT_EQ(cells[std::size_t(missed)], row == 2 ? "true" : "false") << line;
    EXPECT_EQ(cells[std::size_t(interrupted)], row == 1 ? "true" : "false") << line;
  }
  std::stringstream md_text;
  md_text << std::ifstream(md).rdbuf();
  EXPECT_EQ(md_text.str().find("nan"), std::string::npos) << md_text.str();
  EXPECT_NE(md_text.str().find("interrupted"), std::string::npos);
  EXPECT_NE(md_text.str().find("~ = missed its noise target"), std::string::npos);
  EXPECT_NE(knn::summary_cell(rs[2]).find('~'), std::string::npos);
  std::filesystem::remove_all(dir);
}

namespace {

// A file whose per-phase sample lists were trimmed away (results/ keeps some so, to stay in 5 MB)
// still shows each phase's recorded median in the tables, never a placeholder number.
TEST(ResultsSchema, ATrimmedFileShowsItsRecordedPhaseMedians) {
  std::mt19937 rng(fresh_seed());
  json doc = small_document(rng);
  json& phase = doc["results"][0]["phases"]["kernel"];
  const double median = phase["median_ms"].get<double>();
  phase.erase("samples_ms");
  const knn::Result r = knn::read_results_document(doc, "trimmed.json").results[0];
  EXPECT_TRUE(r.phase_samples_ms.at("kernel").empty());
  EXPECT_DOUBLE_EQ(knn::phase_median(r, "kernel"), median);
  EXPECT_NE(knn::version_phases_text(r).find("kernel " + knn::format_ms(median)), std::string::npos) << knn::version_phases_text(r);
  // Without samples and without a median, nothing is invented.
  phase.erase("median_ms");
  EXPECT_EQ(knn::phase_median(knn::read_results_document(doc, "trimmed.json").results[0], "kernel"), -1);
}

}  // namespace
