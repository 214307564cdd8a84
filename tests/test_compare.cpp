// `knnbench compare`: pairing, verdicts, refusals, exit codes, the Mann–Whitney test.
// Documents are built here in the shape report_json.cpp writes, with fresh random samples.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cli_support.hpp"
#include "compare.hpp"
#include "stats.hpp"
#include "terminal.hpp"

namespace {

using json = nlohmann::json;
using knn::CompareOptions;
using knn::CompareReport;
using knn::NotCompared;
using knn::Verdict;

unsigned fresh_seed() { return std::random_device{}(); }

// `count` samples around `center` ms with relative standard deviation `rel_noise`.
std::vector<double> draw(std::mt19937& rng, double center, double rel_noise, int count) {
  std::normal_distribution<double> dist(center, center * rel_noise);
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(std::max(center * 1e-3, dist(rng)));
  return v;
}

// `count` samples around `center` ms, uniform with relative standard deviation `rel_noise`, one in
// each 1/count of the range (where in it, and the order, are the seed's): their order statistics,
// and so the median's interval, move little from one seed to the next.
std::vector<double> draw_spread(std::mt19937& rng, double center, double rel_noise, int count) {
  const double half_width = std::sqrt(3.0) * rel_noise;  // a uniform's standard deviation is half its width / √3
  std::uniform_real_distribution<double> within(0, 1);
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(center * (1 + half_width * (2 * (i + within(rng)) / count - 1)));
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

// Case parameters as configs/default.json has them (k = dimension).
struct CaseShape {
  int id, dim, m, n;
};
// Versions in a file's order, which is not the numeric one the report sorts by.
const std::vector<std::string> kVersions{"v2", "v10", "v0"};
const std::vector<CaseShape> kCases{{0, 3, 1, 2}, {1, 3, 2, 8}, {2, 3, 1, 1024}, {3, 3, 1, 65536}, {4, 16, 1, 65536}, {5, 3, 1024, 1024}};

json make_case(int id, int dim, int m, int n) {
  return {{"id", id},
          {"k", dim},
          {"m", m},
          {"n", n},
          {"topk", 1},
          {"distribution", "uniform"},
          {"seed", 20240607},
          {"groups", {"ta", "smoke"}},
          {"checksums", {{"queries", fmt::format("{:016x}", 0x9e3779b97f4a7c15ull * (id + 1))}, {"references", fmt::format("{:016x}", 0xc2b2ae3d27d4eb4full * (id + 1))}}}};
}

json make_result(const json& c, const std::string& version, const std::vector<double>& samples, const std::string& status = "pass") {
  const knn::Stats s = knn::summarize(status == "pass" ? samples : std::vector<double>{});
  json r;
  r["case"] = c;
  r["version"] = version;
  r["title"] = "a version";
  r["family"] = version == "v10" ? "tree" : "cpu";
  r["status"] = status;
  r["reason"] = status == "skip" ? json("no CUDA device") : status == "fail" ? json("validation failed") : json(nullptr);
  r["path"] = nullptr;
  r["note"] = nullptr;
  r["devices_used"] = json::array();
  r["host_memory"] = "pageable";
  r["validation"] = status == "skip" ? json(nullptr) : json{{"status", status}, {"checked", 1}, {"mismatches", 0}};
  r["samples_ms"] = status == "pass" ? samples : std::vector<double>{};
  r["stats"] = {{"samples", s.samples}, {"median_ms", s.median}, {"min_ms", s.min}, {"max_ms", s.max},
                {"mean_ms", s.mean},     {"stdev_ms", s.stdev},   {"noise_pct", s.noise_pct}};
  r["phases"] = {{"query", {{"median_ms", s.median}, {"min_ms", s.min}, {"max_ms", s.max}, {"samples", s.samples}}}};
  r["device_phases"] = json::object();
  return r;
}

json make_doc(const std::string& gpu = "") {
  json d;
  d["schema_version"] = 1;
  d["meta"] = {{"tool", "knnbench"},     {"knnbench_version", "0.1.0"}, {"git_sha", "5e602e9227b1"}, {"build_type", "Release"},
               {"cxx_compiler", "GNU-12.2.0"}, {"cuda_runtime", "13.0"}, {"cuda_driver", ""},          {"date_utc", "2026-11-21T19:23:09Z"},
               {"argv", {"knnbench", "--group", "smoke"}}, {"complete", true}};
  d["host"] = {{"hostname", "vm"}, {"cpu_model", "Intel(R) Xeon(R) Processor"}, {"cores", 2}, {"memory_bytes", 25276502016ll}, {"omp_threads", 2}, {"os", "Linux"}};
  d["devices"] = json::array();
  if (!gpu.empty())
    d["devices"].push_back({{"ordinal", 0}, {"name", gpu}, {"compute_capability", "9.0"}, {"sm_count", 132}, {"memory_bytes", 85000000000ll}});
  d["device_note"] = gpu.empty() ? json("no CUDA device") : json(nullptr);
  d["matrix"] = {{"file", "configs/default.json"}, {"checksum", "e1b1c98e008706d7"}};
  d["options"] = {{"warmup", 1}, {"min_samples", 5}, {"max_samples", 200}, {"host_memory", "pageable"}};
  d["results"] = json::array();
  return d;
}

// Every smoke case for kVersions, `count` samples each with `rel_noise`, medians spread over decades.
json random_doc(std::mt19937& rng, double rel_noise, int count = 40) {
  json d = make_doc();
  for (const auto& v : kVersions)
    for (const auto& c : kCases)
      d["results"].push_back(make_result(make_case(c.id, c.dim, c.m, c.n), v, draw(rng, std::pow(3.0, c.id), rel_noise, count)));
  return d;
}

// Multiplies every sample of every result by `factor` and recomputes its stats.
json scaled(const json& doc, double factor) {
  json d = doc;
  for (auto& r : d["results"]) {
    std::vector<double> s = r["samples_ms"].get<std::vector<double>>();
    for (double& x : s) x *= factor;
    r = make_result(r["case"], r["version"], s, r["status"]);
  }
  return d;
}

// A document holding one result.
json single(const json& c, const std::string& version, const std::vector<double>& samples) {
  json d = make_doc();
  d["results"].push_back(make_result(c, version, samples));
  return d;
}

int count_verdict(const CompareReport& rep, Verdict v) {
  return int(std::count_if(rep.pairs.begin(), rep.pairs.end(), [v](const auto& p) { return p.verdict == v; }));
}

const knn::UncomparedEntry* find_uncompared(const CompareReport& rep, const std::string& version, int case_id) {
  for (const auto& u : rep.uncompared)
    if (u.version == version && u.case_id == case_id) return &u;
  return nullptr;
}

std::string temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("knn_compare_{}_{}", ::getpid(), fresh_seed());
  std::filesystem::create_directories(dir);
  return dir.string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Writes a.json and b.json into `dir`; returns options naming them.
CompareOptions files_for(const std::string& dir, const json& a, const json& b) {
  write(dir + "/a.json", a.dump(1));
  write(dir + "/b.json", b.dump(1));
  CompareOptions o;
  o.file_a = dir + "/a.json";
  o.file_b = dir + "/b.json";
  return o;
}

}  // namespace

// ---------------------------------------------------------------- verdicts

TEST(Compare, IdenticalFilesAreAllSame) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json a = random_doc(rng, 0.05);
  const CompareReport rep = knn::compare_documents(a, a, {});
  ASSERT_EQ(rep.pairs.size(), kVersions.size() * kCases.size());
  EXPECT_EQ(count_verdict(rep, Verdict::same), int(rep.pairs.size()));
  EXPECT_TRUE(rep.uncompared.empty());
  EXPECT_TRUE(rep.notes.empty());
  EXPECT_EQ(rep.exit_code(), 0);
  for (const auto& p : rep.pairs) {
    EXPECT_DOUBLE_EQ(p.ratio, 1.0);
    ASSERT_TRUE(p.p_value.has_value());
    EXPECT_GT(*p.p_value, 0.99);
  }
  ASSERT_EQ(rep.geomeans.size(), 3u);
  EXPECT_EQ(rep.geomeans[0].version, "v0");
  EXPECT_EQ(rep.geomeans[1].version, "v2");
  EXPECT_EQ(rep.geomeans[2].version, "v10");  // numeric order
  EXPECT_EQ(rep.pairs.front().version, "v0");
  EXPECT_EQ(rep.pairs.back().version, "v10");
  for (const auto& g : rep.geomeans) EXPECT_NEAR(g.geomean, 1.0, 1e-12);
}

TEST(Compare, TenPercentSlowerWithOnePercentNoiseIsSlower) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json a = random_doc(rng, 0.01);
  const json b = scaled(a, 1.10);
  const CompareReport rep = knn::compare_documents(a, b, {});
  const int n = int(rep.pairs.size());
  ASSERT_EQ(n, int(kVersions.size() * kCases.size()));
  EXPECT_EQ(count_verdict(rep, Verdict::slower), n);
  EXPECT_EQ(rep.slower, n);
  EXPECT_EQ(rep.exit_code(), knn::kCompareExitSlower);
  for (const auto& p : rep.pairs) {
    EXPECT_NEAR(p.ratio, 1.10, 1e-9);
    ASSERT_TRUE(p.p_value.has_value());
    EXPECT_LT(*p.p_value, 0.001);
  }
  for (const auto& g : rep.geomeans) EXPECT_NEAR(g.geomean, 1.10, 1e-9);

  // The other way round nothing is slower.
  const CompareReport back = knn::compare_documents(b, a, {});
  EXPECT_EQ(count_verdict(back, Verdict::faster), n);
  EXPECT_EQ(back.exit_code(), 0);
}

// Three versions of unrelated code all 10 % slower (or faster): a note says they moved together and
// what that usually means; one or two versions moving, or a move within --threshold, say nothing.
TEST(Compare, VersionsMovingTogetherAreNoted) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json a = random_doc(rng, 0.01);
  const auto drift = [](const CompareReport& rep) {
    std::vector<std::string> out;
    for (const auto& n : rep.notes)
      if (n.find("moved the same way") != std::string::npos) out.push_back(n);
    return out;
  };
  const auto slower_only = [&](const std::vector<std::string>& versions) {
    json d = a;
    for (auto& r : d["results"])
      if (std::find(versions.begin(), versions.end(), r["version"].get<std::string>()) != versions.end()) {
        std::vector<double> s = r["samples_ms"].get<std::vector<double>>();
        for (double& x : s) x *= 1.10;
        r = make_result(r["case"], r["version"], s, r["status"]);
      }
    return d;
  };
  auto notes = drift(knn::compare_documents(a, scaled(a, 1.10), {}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("3 versions moved the same way, each beyond --threshold 5%"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("v0 +10.0%, v2 +10.0%, v10 +10.0%"), std::string::npos) << notes[0];
  notes = drift(knn::compare_documents(a, scaled(a, 1 / 1.10), {}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("v0 -9.1%"), std::string::npos) << notes[0];
  EXPECT_TRUE(drift(knn::compare_documents(a, slower_only({"v2"}), {})).empty());
  EXPECT_TRUE(drift(knn::compare_documents(a, slower_only({"v2", "v10"}), {})).empty());
  // A version compared on one case only does not count: v10 kept on case 0 alone, so two remain.
  CompareOptions one_case_v10;
  json few = scaled(a, 1.10);
  json a_few = a;
  for (json* d : {&few, &a_few}) {
    json kept = json::array();
    for (auto& r : (*d)["results"])
      if (r["version"] != "v10" || r["case"]["id"] == 0) kept.push_back(r);
    (*d)["results"] = kept;
  }
  EXPECT_TRUE(drift(knn::compare_documents(a_few, few, one_case_v10)).empty());
  CompareOptions wide;
  wide.min_effect_pct = 12;
  EXPECT_TRUE(drift(knn::compare_documents(a, scaled(a, 1.10), wide)).empty());
}

TEST(Compare, AChangeWithinTheNoiseIsSame) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  // A is quiet (0.5 %), B very noisy (40 %): a 7 % move is beyond the minimum effect but lies
  // within B's median interval. Drawn from a normal, 40 samples put that interval under ±7 % for
  // about 1 seed in 620 (323 of 200 000 seeds); spread evenly instead, one sample in each 1/40 of
  // the range, ranks 14 and 27 (the interval's ends) lie 0.3 of the range apart at the least: ±20 %.
  const auto quiet = draw(rng, 2.0, 0.005, 40);
  auto noisy = draw_spread(rng, 2.0, 0.40, 40);
  const double shift = 1.07 * knn::median_of(quiet) / knn::median_of(noisy);
  for (double& x : noisy) x *= shift;
  const json c = make_case(3, 3, 1, 65536), a = single(c, "v3", quiet);
  const CompareReport rep = knn::compare_documents(a, single(c, "v3", noisy), {});
  ASSERT_EQ(rep.pairs.size(), 1u);
  EXPECT_NEAR(rep.pairs[0].effect_pct(), 7.0, 1e-9);
  ASSERT_GT(rep.pairs[0].a_noise_pct + rep.pairs[0].b_noise_pct, 7.0);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::same);
  // Both quiet: the same 7 % is a real change.
  auto quiet2 = draw(rng, 2.0, 0.005, 40);
  const double shift2 = 1.07 * knn::median_of(quiet) / knn::median_of(quiet2);
  for (double& x : quiet2) x *= shift2;
  EXPECT_EQ(knn::compare_documents(a, single(c, "v3", quiet2), {}).pairs.at(0).verdict, Verdict::slower);
}

// The two misses: outliers inflated the stdev-based noise until 1.5x and 0.3x read SAME.
TEST(Compare, OutliersDoNotHideALargeChangeInEitherDirection) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json c = make_case(3, 3, 1, 65536);
  auto with_outliers = [&rng](double center) {
    auto v = draw(rng, center, 0.03, 60);
    for (int i = 0; i < 8; ++i) v[std::size_t(i) * 7] *= 12;  // 8 of 60 calls hit by something else
    return v;
  };
  const auto base = with_outliers(1.0);
  json a = make_doc();
  a["results"].push_back(make_result(c, "v10", base));
  ASSERT_GT(a["results"][0]["stats"]["noise_pct"].get<double>(), 53.0);  // the old noise: every change "within" it
  for (const auto& [factor, expect] : std::vector<std::pair<double, Verdict>>{{1.518, Verdict::slower}, {0.307, Verdict::faster}}) {
    json b = make_doc();
    b["results"].push_back(make_result(c, "v10", with_outliers(factor)));
    const CompareReport rep = knn::compare_documents(a, b, {});
    ASSERT_EQ(rep.pairs.size(), 1u);
    EXPECT_EQ(rep.pairs[0].verdict, expect) << "factor " << factor;
    EXPECT_LT(*rep.pairs[0].p_value, 0.001);
  }
}

// The false alarm: +0.7 % with 0.4 % noise, significant by the U test, is no regression.
TEST(Compare, ASignificantButSmallChangeIsSame) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const auto base = draw(rng, 4.956, 0.004, 200);
  std::vector<double> slower = base;
  for (double& x : slower) x *= 1.007;
  const json c = make_case(11, 16, 1024, 1048576), a = single(c, "v4", base), b = single(c, "v4", slower);
  const CompareReport rep = knn::compare_documents(a, b, {});
  ASSERT_EQ(rep.pairs.size(), 1u);
  EXPECT_LT(*rep.pairs[0].p_value, 0.01);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::same);
  EXPECT_EQ(rep.exit_code(), 0);
  // Under a minimum effect of 0.5 % it counts.
  CompareOptions strict;
  strict.min_effect_pct = 0.5;
  strict.min_change_ms = 0;  // 0.035 ms: under the default floor
  EXPECT_EQ(knn::compare_documents(a, b, strict).pairs.at(0).verdict, Verdict::slower);
}

// Two processes of the same binary moved sub-millisecond GPU calls by tens of microseconds with ~1 %
// noise inside each (docs/measurement.md): such a change is SAME under the default --min-change,
// and counts when the user turns the floor off or the change is larger than it.
TEST(Compare, ASmallAbsoluteChangeIsSameUnderMinChange) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json c = make_case(4, 3, 1024, 65536);
  const auto base = draw(rng, 0.155, 0.002, 200);
  for (const double factor : {1.2, 1.4}) {  // +0.031 ms, +0.062 ms
    std::vector<double> slower = base;
    for (double& x : slower) x *= factor;
    const json a = single(c, "v6", base), b = single(c, "v6", slower);
    const CompareReport rep = knn::compare_documents(a, b, {});
    ASSERT_EQ(rep.pairs.size(), 1u);
    EXPECT_LT(*rep.pairs[0].p_value, 0.01);
    EXPECT_EQ(rep.pairs[0].verdict, factor < 1.3 ? Verdict::same : Verdict::slower) << factor;
    CompareOptions no_floor;
    no_floor.min_change_ms = 0;
    EXPECT_EQ(knn::compare_documents(a, b, no_floor).pairs.at(0).verdict, Verdict::slower) << factor;
    CompareOptions high_floor;
    high_floor.min_change_ms = 0.1;
    EXPECT_EQ(knn::compare_documents(a, b, high_floor).pairs.at(0).verdict, Verdict::same) << factor;
  }
  CompareOptions bad;
  bad.min_change_ms = -1;
  const json a = single(c, "v6", base);
  EXPECT_THROW(knn::compare_documents(a, a, bad), knn::CompareError);
}

TEST(Compare, TooFewSamplesForTheTestIsSaid) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json c = make_case(11, 16, 1024, 1048576);
  for (int few : {1, 2, 4}) {
    json a = make_doc(), b = make_doc();
    a["results"].push_back(make_result(c, "v0", draw(rng, 5000, 0.01, few == 4 ? 4 : 20)));
    b["results"].push_back(make_result(c, "v0", draw(rng, 10000, 0.01, few)));  // twice as slow, but too few samples
    const CompareReport rep = knn::compare_documents(a, b, {});
    ASSERT_EQ(rep.pairs.size(), 1u);
    EXPECT_EQ(rep.pairs[0].verdict, Verdict::too_few) << few;
    EXPECT_EQ(rep.pairs[0].p_value.has_value(), few >= knn::kCompareMinSamples);
    EXPECT_EQ(rep.exit_code(), 0);
    {  // the text row says "too few" and stays within 100 columns; the legend spells it out
      const std::string text = knn::format_compare(rep, false);
      EXPECT_NE(text.find("too few (samples)"), std::string::npos);
      const auto row = text.find("\nv0 ");
      ASSERT_NE(row, std::string::npos) << text;
      const std::string line = text.substr(row + 1, text.find('\n', row + 1) - row - 1);
      EXPECT_NE(line.find("too few"), std::string::npos) << line;
      EXPECT_LE(line.size(), 100u) << line;
    }
    EXPECT_EQ(rep.geomeans.at(0).too_few, 1);
    EXPECT_EQ(rep.geomeans.at(0).pairs, 1);  // its ratio still counts
  }
  // 5 against 5 can reach 0.01: judged.
  json a = make_doc(), b = make_doc();
  a["results"].push_back(make_result(c, "v0", draw(rng, 5000, 0.01, 5)));
  b["results"].push_back(make_result(c, "v0", draw(rng, 10000, 0.01, 5)));
  EXPECT_EQ(knn::compare_documents(a, b, {}).pairs.at(0).verdict, Verdict::slower);
}

// ---------------------------------------------------------------- what is not compared

TEST(Compare, DifferentInputChecksumsAreRefused) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json a = random_doc(rng, 0.02);
  json b = scaled(a, 2.0);  // would be SLOWER everywhere if compared
  b["results"][2]["case"]["checksums"]["queries"] = "0123456789abcdef";
  b["results"][3]["case"]["checksums"]["references"] = "fedcba9876543210";
  const CompareReport rep = knn::compare_documents(a, b, {});
  EXPECT_EQ(rep.pairs.size(), kVersions.size() * kCases.size() - 2);
  for (int id : {2, 3}) {
    const auto* u = find_uncompared(rep, "v2", id);
    ASSERT_NE(u, nullptr) << "case " << id;
    EXPECT_EQ(u->kind, NotCompared::refused);
    EXPECT_NE(u->detail.find("not comparable"), std::string::npos) << u->detail;
    for (const auto& p : rep.pairs) EXPECT_FALSE(p.version == "v2" && p.case_id == id);
  }
  EXPECT_EQ(rep.slower, int(kVersions.size() * kCases.size() - 2));
  EXPECT_EQ(rep.exit_code(), knn::kCompareExitSlower);
  EXPECT_NE(knn::format_compare(rep, false).find("different inputs are not comparable"), std::string::npos);
}

TEST(Compare, OtherCaseParametersAreRefusedNotPaired) {
  const unsigned seed = fresh_seed();
  std::mt19937 rng(seed);
  const json c = make_case(4, 16, 1, 65536);
  json c2 = c;
  c2["seed"] = 7;
  json a = make_doc(), b = make_doc();
  a["results"].push_back(make_result(c, "v0", draw(rng, 1.0, 0.01, 10)));
  b["results"].push_back(make_result(c2, "v0", draw(rng, 1.0, 0.01, 10)));
  const CompareReport rep = knn::compare_documents(a, b, {});
  EXPECT_TRUE(rep.pairs.empty());
  ASSERT_EQ(rep.uncompared.size(), 1u);
  EXPECT_EQ(rep.uncompared[0].kind, NotCompared::refused);
  EXPECT_NE(rep.uncompared[0].detail.find("seed=7"), std::string::npos) << rep.uncompared[0].detail;
}

TEST(Compare, ResultsInOnlyOneFileAreListed) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json a = random_doc(rng, 0.02);
  json b = a;
  auto& rs = b["results"];
  rs.erase(rs.begin() + 7);  // v10 case 1
  rs.erase(rs.begin() + 0);  // v2 case 0
  rs.push_back(make_result(make_case(2, 3, 1, 1024), "v3", draw(rng, 0.5, 0.02, 10)));
  const CompareReport rep = knn::compare_documents(a, b, {});
  EXPECT_EQ(rep.pairs.size(), kVersions.size() * kCases.size() - 2);
  const auto* v2 = find_uncompared(rep, "v2", 0);
  const auto* v10 = find_uncompared(rep, "v10", 1);
  const auto* v3 = find_uncompared(rep, "v3", 2);
  ASSERT_TRUE(v2 && v10 && v3);
  EXPECT_EQ(rep.uncompared.size(), 3u);
  EXPECT_EQ(v2->kind, NotCompared::only_in_a);
  EXPECT_EQ(v10->kind, NotCompared::only_in_a);
  EXPECT_EQ(v3->kind, NotCompared::only_in_b);
  const std::string text = knn::format_compare(rep, false);
  EXPECT_NE(text.find("only in A"), std::string::npos);
  EXPECT_NE(text.find("only in B"), std::string::npos);
}

TEST(Compare, SkippedOrFailedResultsAreListedWithTheirStatus) {
  const unsigned seed = fresh_seed();
  std::mt19937 rng(seed);
  const json c = make_case(5, 3, 1024, 1024);
  json a = make_doc(), b = make_doc();
  a["results"].push_back(make_result(c, "v3", draw(rng, 1.0, 0.01, 10)));
  b["results"].push_back(make_result(c, "v3", {}, "skip"));
  a["results"].push_back(make_result(c, "v4", draw(rng, 1.0, 0.01, 10)));
  b["results"].push_back(make_result(c, "v4", draw(rng, 9.0, 0.01, 10), "fail"));
  const CompareReport rep = knn::compare_documents(a, b, {});
  EXPECT_TRUE(rep.pairs.empty());
  ASSERT_EQ(rep.uncompared.size(), 2u);
  EXPECT_EQ(rep.uncompared[0].kind, NotCompared::status);
  EXPECT_NE(rep.uncompared[0].detail.find("B skip"), std::string::npos) << rep.uncompared[0].detail;
  EXPECT_NE(rep.uncompared[1].detail.find("B fail"), std::string::npos) << rep.uncompared[1].detail;
  // Nothing judged: never exit 0, and say why.
  EXPECT_EQ(rep.exit_code(), knn::kCompareExitNothingCompared);
  EXPECT_NE(rep.nothing_compared.find("2 not passing on both sides"), std::string::npos) << rep.nothing_compared;
  EXPECT_NE(knn::format_compare(rep, false).find("Nothing compared: "), std::string::npos);
}

TEST(Compare, InterruptedResultsAreNotCompared) {
  std::mt19937 rng(fresh_seed());
  const json c = make_case(5, 3, 1024, 1024);
  json a = make_doc(), b = make_doc();
  a["results"].push_back(make_result(c, "v3", draw(rng, 1.0, 0.01, 10)));
  b["results"].push_back(make_result(c, "v3", draw(rng, 1.0, 0.01, 10)));
  b["results"][0]["interrupted"] = true;
  const CompareReport rep = knn::compare_documents(a, b, {});
  EXPECT_TRUE(rep.pairs.empty());
  ASSERT_EQ(rep.uncompared.size(), 1u);
  EXPECT_NE(rep.uncompared[0].detail.find("interrupted"), std::string::npos) << rep.uncompared[0].detail;
}

// ---------------------------------------------------------------- options

TEST(Compare, HideBelowHidesSmallChangesButKeepsThemInTheGeomean) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const json a = random_doc(rng, 0.002);
  json b = scaled(a, 1.03);  // 3 %: under the minimum effect, and hidden under --hide-below 5
  for (std::size_t i = 0; i < 3; ++i) b["results"][i] = scaled(json{{"results", {a["results"][i]}}}, 1.5)["results"][0];
  CompareOptions o;
  o.hide_below_pct = 5;
  const CompareReport rep = knn::compare_documents(a, b, o);
  EXPECT_EQ(rep.hidden, int(rep.pairs.size()) - 3);
  EXPECT_EQ(rep.slower, 3);
  EXPECT_EQ(rep.hidden_slower, 0);
  EXPECT_EQ(count_verdict(rep, Verdict::same), int(rep.pairs.size()) - 3);
  EXPECT_EQ(rep.exit_code(), 1);
  // v2 (first in the file) has 3 pairs at 1.5 and 3 hidden at 1.03.
  const double expect_v2 = std::exp((3 * std::log(1.5) + 3 * std::log(1.03)) / 6);
  ASSERT_EQ(rep.geomeans.at(1).version, "v2");
  EXPECT_NEAR(rep.geomeans.at(1).geomean, expect_v2, 1e-9);
  EXPECT_EQ(rep.geomeans.at(1).pairs, 6);
  EXPECT_NEAR(rep.geomeans.at(0).geomean, 1.03, 1e-9);
  // Hidden rows are not printed.
  const std::string text = knn::format_compare(rep, false);
  const std::string table = text.substr(0, text.find("Geometric mean"));
  EXPECT_EQ(table.find("+3.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("+50.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("hidden"), std::string::npos) << table;
}

TEST(Compare, VersionAndCaseFilters) {
  const unsigned seed = fresh_seed();
  std::mt19937 rng(seed);
  const json a = random_doc(rng, 0.01);
  const json b = scaled(a, 1.2);
  CompareOptions o;
  o.versions = {"v10"};
  o.cases = {"1-3", "5"};
  const CompareReport rep = knn::compare_documents(a, b, o);
  ASSERT_EQ(rep.pairs.size(), 4u);
  for (const auto& p : rep.pairs) {
    EXPECT_EQ(p.version, "v10");
    EXPECT_TRUE(p.case_id == 5 || (p.case_id >= 1 && p.case_id <= 3)) << p.case_id;
  }
  EXPECT_EQ(rep.slower, 4);
  EXPECT_EQ(rep.exit_code(), 1);
  o.versions = {"v0,v10"};
  o.cases = {"0,4"};
  EXPECT_EQ(knn::compare_documents(a, b, o).pairs.size(), 4u);

  // A filter that matches nothing is a usage error, never a silent "nothing slower".
  CompareOptions typo;
  typo.versions = {"v14"};
  EXPECT_THROW(knn::compare_documents(a, b, typo), knn::CompareError);
  typo = {};
  typo.cases = {"40-45"};
  EXPECT_THROW(knn::compare_documents(a, b, typo), knn::CompareError);
  typo.cases = {"3-x"};
  EXPECT_THROW(knn::compare_documents(a, b, typo), knn::CompareError);
}

// However many rows are SLOWER, the exit code is 1: the count is in the report, never in the code.
TEST(Compare, ManySlowerRowsExitOne) {
  const unsigned seed = fresh_seed();
  std::mt19937 rng(seed);
  json a = make_doc();
  for (int id = 0; id < 130; ++id) a["results"].push_back(make_result(make_case(id, 3, 1, 1024 + id), "v0", draw(rng, 1.0, 0.01, 5)));
  const CompareReport rep = knn::compare_documents(a, scaled(a, 1.5), {});
  EXPECT_EQ(rep.slower, 130);
  EXPECT_EQ(rep.exit_code(), 1);
  EXPECT_NE(knn::format_compare(rep, false).find("130 SLOWER verdicts: exit code 1."), std::string::npos);
}

TEST(Compare, DifferentDevicesAreSaidAndStillCompared) {
  const unsigned seed = fresh_seed();
  std::mt19937 rng(seed);
  json a = random_doc(rng, 0.01);
  json b = scaled(a, 0.5);
  a["devices"] = make_doc("NVIDIA H100 80GB HBM3")["devices"];
  b["devices"] = make_doc("NVIDIA H200")["devices"];
  const CompareReport rep = knn::compare_documents(a, b, {});
  ASSERT_FALSE(rep.notes.empty());
  EXPECT_NE(rep.notes[0].find("Devices differ"), std::string::npos);
  EXPECT_EQ(count_verdict(rep, Verdict::faster), int(rep.pairs.size()));
  const std::string text = knn::format_compare(rep, false);
  EXPECT_NE(text.find("NVIDIA H100 80GB HBM3"), std::string::npos);
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos);
}

TEST(Compare, MarkdownTable) {
  const unsigned seed = fresh_seed();
  std::mt19937 rng(seed);
  const json a = random_doc(rng, 0.01);
  const CompareReport rep = knn::compare_documents(a, scaled(a, 1.1), {});
  const std::string md = knn::format_compare(rep, true);
  EXPECT_NE(md.find("| version | case | A median ms | A noise | B median ms | B noise |"), std::string::npos) << md;
  EXPECT_NE(md.find("| --- | ---: |"), std::string::npos);
  EXPECT_NE(md.find("**SLOWER**"), std::string::npos);
  EXPECT_NE(md.find("### Geometric mean of B/A per version"), std::string::npos);
}

TEST(Compare, InvalidDocumentsNameTheFile) {
  CompareOptions o;
  o.file_a = "base.json";
  o.file_b = "new.json";
  json good = make_doc();
  json wrong_schema = make_doc();
  wrong_schema["schema_version"] = 3;
  try {
    knn::compare_documents(good, wrong_schema, o);
    FAIL() << "schema_version 3 accepted";
  } catch (const knn::CompareError& e) {
    EXPECT_NE(std::string(e.what()).find("new.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("schema_version"), std::string::npos) << e.what();
  }
  json no_seed = make_doc();
  no_seed["results"].push_back(make_result(make_case(1, 3, 2, 8), "v0", {1, 2, 3}));
  no_seed["results"][0]["case"].erase("seed");
  try {
    knn::compare_documents(no_seed, good, o);
    FAIL() << "missing seed accepted";
  } catch (const knn::CompareError& e) {
    EXPECT_EQ(std::string(e.what()), "base.json: results[0].case.seed: missing");
  }
  EXPECT_THROW(knn::compare_documents(json::array(), good, o), knn::CompareError);
}

// ---------------------------------------------------------------- Mann–Whitney U

TEST(MannWhitney, HandComputedExactCases) {
  // No ties, 3 against 3: C(6,3) = 20 orderings. U counts pairs a > b.
  // {1,2,3} vs {4,5,6}: U = 0, the most extreme ordering: p = 2 · 1/20.
  EXPECT_NEAR(knn::mann_whitney_p({1, 2, 3}, {4, 5, 6}), 0.1, 1e-12);
  EXPECT_NEAR(knn::mann_whitney_p({4, 5, 6}, {1, 2, 3}), 0.1, 1e-12);
  // {1,3,5} vs {2,4,6}: U = 3; U's frequencies for u = 0..3 are 1, 1, 2, 3: p = 2 · 7/20.
  EXPECT_NEAR(knn::mann_whitney_p({1, 3, 5}, {2, 4, 6}), 0.7, 1e-12);
}

TEST(MannWhitney, HandComputedNormalApproximationWithTies) {
  // {1,2,2,3} vs {2,3,4,5}: mid-ranks 1, 3, 3, 5.5 for a: R = 12.5, U = 12.5 − 10 = 2.5, mean 8.
  // Ties: a group of 3 (24) and of 2 (6): var = 16/12 · (9 − 30/56) = 11.2857.
  // z = (|2.5 − 8| − 0.5)/√11.2857 = 1.48835, p = erfc(z/√2) = 0.136658.
  EXPECT_NEAR(knn::mann_whitney_p({1, 2, 2, 3}, {2, 3, 4, 5}), 0.13665824773814753, 1e-12);
  EXPECT_DOUBLE_EQ(knn::mann_whitney_p({1, 2, 2, 3}, {2, 3, 4, 5}), knn::mann_whitney_p({2, 3, 4, 5}, {1, 2, 2, 3}));
  // All equal: no evidence of any difference.
  EXPECT_DOUBLE_EQ(knn::mann_whitney_p({7, 7, 7}, {7, 7, 7, 7}), 1.0);
  EXPECT_TRUE(std::isnan(knn::mann_whitney_p({}, {1, 2, 3})));
}

TEST(MannWhitney, SeparatedSamplesAreSignificant) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  for (int n : {5, 12, 30, 200}) {
    const auto a = draw(rng, 1.0, 0.01, n), b = draw(rng, 1.2, 0.01, n);
    EXPECT_LT(knn::mann_whitney_p(a, b), 0.01) << "n = " << n;
  }
}

TEST(MannWhitney, SameDistributionIsNotSignificant) {
  std::mt19937 rng(12345);  // fixed: a fresh seed would fail 5 % of the time by design
  for (int n : {8, 15, 40, 200}) {
    const auto a = draw(rng, 1.0, 0.05, n), b = draw(rng, 1.0, 0.05, n);
    EXPECT_GT(knn::mann_whitney_p(a, b), 0.05) << "n = " << n;
  }
}

TEST(MannWhitney, ExactAtTheTabulatedCriticalValue) {
  // n = 20 against 20, two-sided α = 0.05: the critical U in the tables is 127.
  // Exact tails (summed by hand from the counting recurrence): U = 127 → 0.049090, U = 128 → 0.052400.
  // b = 0, 2, ..., 38; an a just under 2k beats k of them; 7 a's beat 7 and 13 beat 6 (U = 127).
  auto build = [](int u) {
    std::vector<double> a, b;
    for (int i = 0; i < 20; ++i) b.push_back(2.0 * i);
    for (int i = 0; i < 20; ++i) {
      const int beats = 6 + (i < u - 120 ? 1 : 0);
      a.push_back(2.0 * beats - 1 + 0.01 * i);  // distinct: no ties, so the exact path
    }
    return std::make_pair(a, b);
  };
  const auto [a127, b127] = build(127);
  const auto [a128, b128] = build(128);
  EXPECT_NEAR(knn::mann_whitney_p(a127, b127), 0.04909032518937244, 1e-12);
  EXPECT_NEAR(knn::mann_whitney_p(a128, b128), 0.05239952187284973, 1e-12);
  EXPECT_NEAR(knn::mann_whitney_p(b128, a128), 0.05239952187284973, 1e-12);
}

// ---------------------------------------------------------------- files and the command line

TEST(CompareFiles, RunCompareExitsOneOnSlowerRows) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const std::string dir = temp_dir();
  const json a = random_doc(rng, 0.01);
  json b = a;
  for (int i : {1, 4, 8}) b["results"][i] = scaled(json{{"results", {a["results"][i]}}}, 1.25)["results"][0];
  CompareOptions o = files_for(dir, a, b);
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(knn::run_compare(o), 1);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("SLOWER"), std::string::npos);
  EXPECT_NE(out.find("3 SLOWER verdicts: exit code 1."), std::string::npos) << out;

  o.file_b = dir + "/a.json";
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(knn::run_compare(o), 0);
  ::testing::internal::GetCapturedStdout();
  std::filesystem::remove_all(dir);
}

TEST(CompareFiles, UsageErrorsExit2WithOneLine) {
  const std::string dir = temp_dir();
  write(dir + "/ok.json", make_doc().dump());
  write(dir + "/broken.json", "{\"schema_version\": 1, \"results\": [");
  json v2 = make_doc();
  v2["schema_version"] = 3;
  write(dir + "/v2.json", v2.dump());
  for (const auto& [other, expect] : std::vector<std::pair<std::string, std::string>>{
           {dir + "/missing.json", "missing.json: no such file"},
           {dir + "/broken.json", "broken.json: not valid JSON"},
           {dir + "/v2.json", "v2.json: schema_version 3"},
           {dir, "is a directory"}}) {
    CompareOptions o;
    o.file_a = dir + "/ok.json";
    o.file_b = other;
    ::testing::internal::CaptureStderr();
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(knn::run_compare(o), knn::kCompareExitUsage) << other;
    EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(expect), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  CompareOptions none;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(knn::run_compare(none), 2);
  ::testing::internal::GetCapturedStderr();
  std::filesystem::remove_all(dir);
}

TEST(CompareFiles, SubcommandBindsItsFlags) {
  CLI::App app{"test", "knnbench"};
  CompareOptions o;
  CLI::App* sub = knn::add_compare_subcommand(app, o);
  app.parse("compare base.json new.json --threshold 2.5 --min-change 0.2 --alpha 0.05 --hide-below 1 --version v1,v3 --case 11 --case 0,8-10 --md out.md", false);
  EXPECT_TRUE(sub->parsed());
  EXPECT_EQ(o.file_a, "base.json");
  EXPECT_EQ(o.file_b, "new.json");
  EXPECT_DOUBLE_EQ(o.min_effect_pct, 2.5);
  EXPECT_DOUBLE_EQ(o.min_change_ms, 0.2);
  EXPECT_DOUBLE_EQ(o.alpha, 0.05);
  EXPECT_DOUBLE_EQ(o.hide_below_pct, 1);
  EXPECT_EQ(o.versions, (std::vector<std::string>{"v1", "v3"}));
  EXPECT_EQ(o.cases, (std::vector<std::string>{"11", "0", "8-10"}));
  EXPECT_EQ(o.markdown_path, "out.md");
}

TEST(CompareFiles, NothingComparedIsNotASuccess) {
  const unsigned seed = fresh_seed();
  std::mt19937 rng(seed);
  const std::string dir = temp_dir();
  const json a = random_doc(rng, 0.01);
  json b = a;
  for (auto& r : b["results"]) r = make_result(r["case"], r["version"], {}, "skip");  // B skipped everything
  CompareOptions o = files_for(dir, a, b);
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(knn::run_compare(o), knn::kCompareExitNothingCompared);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find(fmt::format("{} not passing on both sides", kVersions.size() * kCases.size())), std::string::npos) << out;
  EXPECT_NE(out.find("exit code 2"), std::string::npos) << out;
  // Filters that leave one side empty say so too.
  json only_v0 = make_doc();
  only_v0["results"].push_back(a["results"][2 * kCases.size()]);  // v0 comes third in the file
  write(dir + "/c.json", only_v0.dump(1));
  o.file_b = dir + "/c.json";
  o.versions = {"v2"};
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(knn::run_compare(o), knn::kCompareExitNothingCompared);
  const std::string out2 = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out2.find("c.json holds no result after --version/--case"), std::string::npos) << out2;
  std::filesystem::remove_all(dir);
}

// --md FILE writes the markdown report and keeps the text on the terminal; "--md -" prints the
// markdown instead of the text.
TEST(CompareFiles, MarkdownGoesToAFileOrToStdout) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const std::string dir = temp_dir();
  const json a = random_doc(rng, 0.01);
  CompareOptions o = files_for(dir, a, scaled(a, 1.25));
  o.markdown_path = dir + "/cmp.md";
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(knn::run_compare(o), 1);
  const std::string text = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(text.find("| "), std::string::npos) << text;
  EXPECT_EQ(text.find('\033'), std::string::npos) << "colour in piped output";
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(knn::display_width(line), knn::kScreenWidth) << line;
  std::ifstream in(o.markdown_path);
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("| "), std::string::npos) << md;
  EXPECT_NE(md.find("SLOWER"), std::string::npos) << md;
  o.markdown_path = "-";
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(knn::run_compare(o), 1);
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), md);
  // On a terminal (script(1)) SLOWER is red; with NO_COLOR, and in the markdown, never.
  if (std::system("command -v script >/dev/null 2>&1") == 0) {
    const std::string cmd = "script -qec '" + std::string(KNN_BINARY) + " compare " + o.file_a + " " + o.file_b + "' /dev/null";
    const auto tty = knn::testing::run("", cmd);
    EXPECT_EQ(tty.code, 1) << tty.out;
    EXPECT_NE(tty.out.find("\033[1;31mSLOWER\033[0m"), std::string::npos) << tty.out;
    const auto plain = knn::testing::run("NO_COLOR=1", cmd);
    EXPECT_EQ(plain.out.find('\033'), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("SLOWER"), std::string::npos) << plain.out;
  }
  std::filesystem::remove_all(dir);
}
