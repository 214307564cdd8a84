// The host canary (src/canary.*): its readings, its fields in results files (written, read back,
// malformed ones refused), compare's HOST DRIFT and report's spread.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "canary.hpp"
#include "cli_support.hpp"
#include "compare.hpp"
#include "report.hpp"
#include "results_schema.hpp"
#include "stats.hpp"

namespace {

using json = nlohmann::json;
using knn::Verdict;

TEST(Canary, ReadingsArePositiveAndPlausible) {
  const knn::CanaryReading r = knn::read_canary(knn::HostMemory::pageable);
  // A loop of 600 000 dependent steps: more than 0.05 ms on any CPU of today, less than a second.
  EXPECT_GT(r.cpu_ms, 0.05);
  EXPECT_LT(r.cpu_ms, 1000);
  // One thread reading 32 MiB: between 0.1 GB/s and 1000 GB/s.
  EXPECT_GT(r.mem_gbps, 0.1);
  EXPECT_LT(r.mem_gbps, 1000);
  EXPECT_FALSE(r.cpus.empty());
  const knn::HostFacts f = knn::read_host_facts();
  EXPECT_FALSE(f.affinity.empty());
  EXPECT_FALSE(f.numa_nodes.empty());
  EXPECT_TRUE(f.cpufreq == "readable" || f.cpufreq == "unreadable") << f.cpufreq;
}

TEST(Canary, FactsOfABuffer) {
  std::vector<float> buffer(1 << 20, 1.0f);
  const int node = knn::numa_node_of(buffer.data());
  EXPECT_GE(node, -1);  // -1: the kernel does not say (then the result reads "unknown")
  EXPECT_GE(knn::anon_huge_kb_of({buffer.data()}), 0) << "the heap's mapping is in /proc/self/smaps";
  EXPECT_EQ(knn::anon_huge_kb_of({reinterpret_cast<const void*>(std::uintptr_t(8))}), -1) << "no mapping holds address 8";
  EXPECT_EQ(knn::cpu_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  knn::CanaryProbe probe(true, knn::HostMemory::pageable, {{buffer.data(), buffer.size() * sizeof(float)}});
  knn::ResultCanary c;
  knn::ResultHostFacts facts;
  probe.finish(c, facts);
  EXPECT_TRUE(c.recorded());
  EXPECT_GT(c.cpu_ms_after, 0);
  EXPECT_GT(c.mem_gbps_after, 0);
  EXPECT_EQ(facts.input_numa_node, node >= 0 ? std::to_string(node) : "unknown");
  knn::CanaryProbe off(false, knn::HostMemory::pageable, {});
  knn::ResultCanary none;
  off.finish(none, facts);
  EXPECT_FALSE(none.recorded());
}

// A run of v0 on a small case: every result carries its canary and the file its host facts, and
// they read back; --no-canary writes neither.
TEST(Canary, RecordedInEveryResultAndReadBack) {
  const std::string out = knn::testing::tmp_path("canary.json");
  const std::string base = fmt::format("--config {}/configs/default.json --case 0,2 --version v0 --min-time 0.01 --max-noise 0 --json {}", KNN_SOURCE_DIR, out);
  const auto r = knn::testing::run(KNN_BINARY, base);
  ASSERT_EQ(r.code, 0) << r.out;
  const json doc = json::parse(std::ifstream(out));
  ASSERT_TRUE(doc.contains("host_facts")) << doc.dump().substr(0, 400);
  for (const auto& res : doc["results"]) {
    ASSERT_TRUE(res.contains("canary")) << res.dump().substr(0, 400);
    for (const char* key : {"cpu_ms_before", "cpu_ms_after", "mem_gbps_before", "mem_gbps_after"}) EXPECT_GT(res["canary"][key].get<double>(), 0) << key;
    EXPECT_TRUE(res["host_facts"]["input_numa_node"].is_string());
    EXPECT_FALSE(res["host_facts"]["cpus"].empty());
    // getrusage is readable here; the steal share is null only when /proc/stat's clock did not
    // advance between the two readings (a result shorter than its tick), a percentage otherwise.
    const json& steal = res["host_facts"]["steal_pct"];
    EXPECT_TRUE(steal.is_null() || (steal.get<double>() >= 0 && steal.get<double>() <= 100)) << res["host_facts"];
    EXPECT_GE(res["host_facts"]["involuntary_switches"].get<long long>(), 0) << res["host_facts"];
  }
  const knn::ResultsDocument back = knn::read_results_file(out);
  ASSERT_EQ(back.results.size(), doc["results"].size());
  EXPECT_DOUBLE_EQ(back.results[0].canary.cpu_ms_before, doc["results"][0]["canary"]["cpu_ms_before"].get<double>());
  EXPECT_DOUBLE_EQ(back.results[0].canary.mem_gbps_after, doc["results"][0]["canary"]["mem_gbps_after"].get<double>());
  EXPECT_EQ(back.results[0].host_facts.input_numa_node, doc["results"][0]["host_facts"]["input_numa_node"].get<std::string>());
  EXPECT_TRUE(back.info.host_facts.recorded());
  EXPECT_EQ(back.info.host_facts.affinity, doc["host_facts"]["affinity"].get<std::vector<int>>());

  const auto off = knn::testing::run(KNN_BINARY, base + " --no-canary");
  ASSERT_EQ(off.code, 0) << off.out;
  const json plain = json::parse(std::ifstream(out));
  for (const auto& res : plain["results"]) EXPECT_FALSE(res.contains("canary")) << res.dump().substr(0, 300);
  EXPECT_FALSE(knn::read_results_file(out).results[0].canary.recorded());
}

// ---------------------------------------------------------------- synthetic files

knn::Result result(int case_id, const std::string& version, const std::string& family, bool gpu, double center, unsigned seed,
                   double canary_cpu_ms, double canary_gbps) {
  knn::Result r;
  r.problem_case.id = case_id;
  r.problem_case.dim = 3;
  r.problem_case.m = 1;
  r.problem_case.n = 1024;
  r.version = version;
  r.family = family;
  r.status = knn::Status::pass;
  if (gpu) r.devices_used = {0};
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(center, center * 0.005);
  for (int i = 0; i < 30; ++i) r.samples_ms.push_back(noise(rng));
  r.stats = knn::summarize(r.samples_ms);
  if (canary_cpu_ms > 0) {
    r.canary = knn::ResultCanary{canary_cpu_ms, canary_cpu_ms * 1.01, canary_gbps, canary_gbps * 0.99};
    r.host_facts.input_numa_node = "0";
    r.host_facts.cpus = {0, 1};
  }
  return r;
}

// Side B is 1.3x slower on every result; its canary `canary_factor` times slower (0: no canary).
std::pair<json, json> twin_files(double canary_factor_a, double canary_factor_b) {
  std::vector<knn::Result> a, b;
  unsigned seed = 7;
  for (int c = 0; c < 2; ++c) {
    a.push_back(result(c, "v0", "cpu", false, 2.0, ++seed, canary_factor_a ? 1.0 : 0, 10.0));
    b.push_back(result(c, "v0", "cpu", false, 2.6, ++seed, canary_factor_b ? canary_factor_b : 0, canary_factor_b ? 10.0 / canary_factor_b : 0));
    a.push_back(result(c, "v4", "gpu", true, 2.0, ++seed, canary_factor_a ? 1.0 : 0, 10.0));
    b.push_back(result(c, "v4", "gpu", true, 2.6, ++seed, canary_factor_b ? canary_factor_b : 0, canary_factor_b ? 10.0 / canary_factor_b : 0));
  }
  knn::RunInfo info;
  info.complete = true;
  return {json::parse(knn::results_to_json(info, a).dump()), json::parse(knn::results_to_json(info, b).dump())};
}

TEST(CompareCanary, HostTwiceAsSlowMakesCpuRowsHostDriftAndGpuRowsKeepTheirVerdict) {
  const auto [a, b] = twin_files(1, 2);
  knn::CompareOptions opts;
  const knn::CompareReport rep = knn::compare_documents(a, b, opts);
  ASSERT_EQ(rep.pairs.size(), 4u);
  for (const auto& p : rep.pairs) {
    if (p.version == "v0") {
      EXPECT_EQ(p.verdict, Verdict::host_drift) << "case " << p.case_id;
      EXPECT_NEAR(p.host_ratio, 2.0, 0.05);
    } else {
      EXPECT_EQ(p.verdict, Verdict::slower) << "GPU v4 case " << p.case_id;
    }
  }
  EXPECT_EQ(rep.slower, 2);
  EXPECT_EQ(rep.exit_code(), 1);
  const std::string text = knn::format_compare(rep, false);
  EXPECT_NE(text.find("HOST DRIFT x2.0"), std::string::npos) << text;
  EXPECT_NE(text.find("the hosts ran at different speeds"), std::string::npos) << text;

  // Without the GPU rows, nothing counts: exit 0.
  opts.versions = {"v0"};
  const knn::CompareReport cpu_only = knn::compare_documents(a, b, opts);
  EXPECT_EQ(cpu_only.slower, 0);
  EXPECT_EQ(cpu_only.exit_code(), 0);
}

TEST(CompareCanary, CanariesWithinTheThresholdOrAbsentLeaveTheVerdicts) {
  for (const auto& [fa, fb] : {std::pair{1.0, 1.02}, std::pair{0.0, 0.0}, std::pair{1.0, 0.0}}) {
    const auto [a, b] = twin_files(fa, fb);
    const knn::CompareReport rep = knn::compare_documents(a, b, knn::CompareOptions{});
    for (const auto& p : rep.pairs) EXPECT_EQ(p.verdict, Verdict::slower) << p.version << " case " << p.case_id << ", canaries " << fa << " " << fb;
    EXPECT_EQ(rep.slower, 4);
    EXPECT_EQ(knn::format_compare(rep, false).find("HOST DRIFT"), std::string::npos);
  }
}

// A host that got faster does not make a slower host-bound result a verdict either: the canary
// cannot tell which way a many-threaded result's host moved. GPU results keep theirs.
TEST(CompareCanary, AHostThatGotFasterStillLeavesHostResultsToAb) {
  const auto [a, b] = twin_files(1, 0.5);
  const knn::CompareReport rep = knn::compare_documents(a, b, knn::CompareOptions{});
  for (const auto& p : rep.pairs)
    EXPECT_EQ(p.verdict, p.version == "v0" ? Verdict::host_drift : Verdict::slower) << p.version << " case " << p.case_id;
  EXPECT_EQ(rep.slower, 2);
}

// Equal medians, but the host of run A changed speed during the run (one reading 1.5x slower: the
// spread at which `report` warns): A's host-side times compare with nothing, B's GPU results keep
// their verdicts. An H100 machine gave such a pair: medians 0.2 % apart, spreads 1.52 and 1.17, and
// 13 host-side results up to 37 % FASTER.
TEST(CompareCanary, AHostThatChangedSpeedWithinARunLeavesHostResultsToAb) {
  auto [a, b] = twin_files(1, 1);
  a["results"][0]["canary"]["cpu_ms_after"] = 1.5;
  const knn::CompareReport rep = knn::compare_documents(a, b, knn::CompareOptions{});
  for (const auto& p : rep.pairs)
    EXPECT_EQ(p.verdict, p.version == "v0" ? Verdict::host_drift : Verdict::slower) << p.version << " case " << p.case_id;
  EXPECT_EQ(rep.slower, 2);
  const std::string text = knn::format_compare(rep, false);
  EXPECT_NE(text.find("the host changed speed during run A"), std::string::npos) << text;
  EXPECT_EQ(text.find("the hosts ran at different speeds"), std::string::npos) << text;
  // Under the warning's threshold (1.2): the verdicts stand.
  a["results"][0]["canary"]["cpu_ms_after"] = 1.2;
  for (const auto& p : knn::compare_documents(a, b, knn::CompareOptions{}).pairs) EXPECT_EQ(p.verdict, Verdict::slower) << p.version;
}

TEST(CompareCanary, DependsOnHost) {
  knn::Result r = result(0, "v11", "tree", true, 2.0, 1, 0, 0);
  EXPECT_FALSE(knn::depends_on_host(r));
  r.phase_samples_ms["build"] = std::vector<double>(30, 1.5);  // a host-side build, 3/4 of the call
  EXPECT_TRUE(knn::depends_on_host(r));
  EXPECT_TRUE(knn::depends_on_host(result(0, "p-faiss-flat", "peer", false, 2.0, 1, 0, 0)));
  EXPECT_FALSE(knn::depends_on_host(result(0, "v4", "gpu", true, 2.0, 1, 0, 0)));
}

// ---------------------------------------------------------------- the reader refuses bad fields

std::string refusal(const std::function<void(json&)>& spoil) {
  auto [doc, unused] = twin_files(1, 1);
  spoil(doc);
  try {
    knn::read_results_document(doc, "spoiled.json");
  } catch (const knn::SchemaError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(CanarySchema, MalformedFieldsAreRefusedNamingFileFieldAndValue) {
  EXPECT_EQ(refusal([](json& d) { d["results"][1]["canary"]["cpu_ms_before"] = -1; }),
            "spoiled.json: results[1].canary.cpu_ms_before: -1, expected a finite number > 0");
  EXPECT_EQ(refusal([](json& d) { d["results"][0]["canary"]["mem_gbps_after"] = "fast"; }),
            "spoiled.json: results[0].canary.mem_gbps_after: \"fast\", expected a finite number > 0");
  EXPECT_EQ(refusal([](json& d) { d["results"][0]["canary"].erase("cpu_ms_after"); }), "spoiled.json: results[0].canary.cpu_ms_after: missing");
  EXPECT_NE(refusal([](json& d) { d["results"][0]["canary"]["speed"] = 1; }).find("results[0].canary.speed: unknown field"), std::string::npos);
  EXPECT_EQ(refusal([](json& d) { d["results"][0]["canary"] = 3; }), "spoiled.json: results[0].canary: 3, expected an object");
  EXPECT_EQ(refusal([](json& d) { d["results"][2]["host_facts"]["input_numa_node"] = "north"; }),
            "spoiled.json: results[2].host_facts.input_numa_node: \"north\", expected node numbers (\"0\", \"0,1\") or \"unknown\"");
  EXPECT_EQ(refusal([](json& d) { d["results"][1]["host_facts"]["steal_pct"] = 150; }),
            "spoiled.json: results[1].host_facts.steal_pct: 150, expected a percentage 0-100 or null (unreadable)");
  EXPECT_EQ(refusal([](json& d) { d["results"][1]["host_facts"]["involuntary_switches"] = 2.5; }),
            "spoiled.json: results[1].host_facts.involuntary_switches: 2.5, expected a count >= 0 or null (unreadable)");
  EXPECT_EQ(refusal([](json& d) { d["results"][0]["host_facts"]["cpus"] = {0, -3}; }),
            "spoiled.json: results[0].host_facts.cpus[1]: -3, expected a CPU number >= 0");
  EXPECT_EQ(refusal([](json& d) { d["host_facts"] = {{"cpufreq", "maybe"}}; }), "spoiled.json: host_facts.cpufreq: \"maybe\", expected readable or unreadable");
  EXPECT_EQ(refusal([](json& d) { d["host_facts"] = 5; }), "spoiled.json: host_facts: 5, expected an object");
  // A file without any canary field (older, or --no-canary) reads.
  EXPECT_EQ(refusal([](json& d) {
              for (auto& r : d["results"]) r.erase("canary"), r.erase("host_facts");
            }),
            "(accepted)");
}

// ---------------------------------------------------------------- report's spread

TEST(CanaryReport, SpreadAndWarning) {
  std::vector<knn::Result> rs;
  for (const double cpu : {1.0, 1.1, 1.2}) rs.push_back(result(0, "v0", "cpu", false, 2.0, 3, cpu, 10.0));
  knn::RunInfo info;
  std::string md = knn::canary_spread_text(info, rs, true);
  EXPECT_NE(md.find("CPU loop ms: min 1.000, median 1.10"), std::string::npos) << md;
  EXPECT_NE(md.find("max 1.212 (max/min 1.21)"), std::string::npos) << md;
  EXPECT_EQ(md.find("Warning"), std::string::npos) << md;
  rs.push_back(result(1, "v0", "cpu", false, 2.0, 3, 1.6, 10.0));
  md = knn::canary_spread_text(info, rs, true);
  EXPECT_NE(md.find("**Warning:** the host's speed changed during this run: the canary's max/min is 1.62"), std::string::npos) << md;
  EXPECT_EQ(knn::canary_spread_text(info, {result(0, "v0", "cpu", false, 2.0, 3, 0, 0)}, true), "");
}

}  // namespace
