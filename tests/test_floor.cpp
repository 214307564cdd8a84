// The floors (src/floor.*, src/rates.*, src/results_schema_floor.cpp): the arithmetic of each
// family's floor worked by hand from docs/measurement.md's formulas, the fields in a results file
// (written, read back, malformed ones refused, older files without them), and on a GPU the
// start-up rates themselves.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "cli_support.hpp"
#include "devices.hpp"
#include "floor.hpp"
#include "rates.hpp"
#include "report.hpp"
#include "results_schema.hpp"
#include "stats.hpp"

namespace {

using json = nlohmann::json;
using knn::DeviceRates;
using knn::FloorBound;
using knn::FloorInput;
using knn::ResultFloor;

DeviceRates rates(double h2d, double d2h, double tf32, double int8) {
  DeviceRates r;
  r.sgemm_tflops = tf32 / 8;
  r.tf32_tflops = tf32;
  r.int8_tops = int8;
  r.d2d_gbps = 3000;
  r.h2d_pinned_gbps = h2d;
  r.d2h_pinned_gbps = d2h;
  r.h2d_pageable_gbps = h2d / 2;
  r.d2h_pageable_gbps = d2h / 3;
  r.ms = 90;
  return r;
}

knn::ValueTraits whole(float lowest, float highest) {
  knn::ValueTraits v;
  v.known = v.whole = v.finite = true;
  v.lowest = lowest, v.highest = highest;
  return v;
}

FloorInput shape(long long m, long long n, long long k, long long topk, const std::string& family) {
  FloorInput in;
  in.m = m, in.n = n, in.k = k, in.topk = topk;
  in.family = family;
  in.memory = knn::HostMemory::pinned;
  in.rates = {rates(25, 26, 400, 1200)};
  in.median_ms = 10;
  return in;
}

// ms for `bytes` at `gbps`, ops at `tops`.
double copy_ms(double bytes, double gbps) { return bytes / (gbps * 1e9) * 1e3; }
double compute_ms(double ops, double tops) { return ops / (tops * 1e12) * 1e3; }

TEST(Floor, CopyBoundWhenTheDataIsLargeAndTheWorkSmall) {
  const FloorInput in = shape(1000, 1000000, 8, 10, "gpu");  // float values: TF32
  const ResultFloor f = knn::compute_floor(in);
  const double refs = 4.0 * 1e6 * 8, queries = 4.0 * 1000 * 8, answers = 8.0 * 1000 * 10;
  const double copy = std::max(copy_ms(queries + refs, 25), copy_ms(refs, 25) + copy_ms(answers, 26));
  EXPECT_TRUE(f.decided);
  EXPECT_EQ(f.bound, FloorBound::copy);
  EXPECT_DOUBLE_EQ(f.copy_ms, copy);
  EXPECT_DOUBLE_EQ(f.compute_ms, compute_ms(2.0 * 1000 * 1e6 * 8, 400));
  EXPECT_DOUBLE_EQ(f.floor_ms, copy);
  EXPECT_EQ(f.rate_name, "h2d_pinned_gbps");
  EXPECT_DOUBLE_EQ(f.rate, 25);
  EXPECT_DOUBLE_EQ(f.x_floor, 10 / copy);
}

TEST(Floor, ComputeBoundAtTheInt8RateOnlyWhenTheValuesFitIt) {
  FloorInput in = shape(200000, 200000, 64, 1, "gpu");
  const double ops = 2.0 * 2e5 * 2e5 * 64;
  const double copy = copy_ms(4.0 * 4e5 * 64, 25);  // the inputs; the answers after the references come sooner
  // Whole numbers within 256 values: the int8 GEMM's rate.
  in.values = whole(-3, 252);
  ResultFloor f = knn::compute_floor(in);
  EXPECT_EQ(f.bound, FloorBound::compute);
  EXPECT_EQ(f.rate_name, "int8_tops");
  EXPECT_DOUBLE_EQ(f.floor_ms, compute_ms(ops, 1200));
  EXPECT_DOUBLE_EQ(f.copy_ms, copy);
  // One value more: TF32.
  in.values = whole(-3, 253);
  f = knn::compute_floor(in);
  EXPECT_EQ(f.rate_name, "tf32_tflops");
  EXPECT_DOUBLE_EQ(f.floor_ms, compute_ms(ops, 400));
  // Fractions, values not examined, or k beyond int32 sums: TF32.
  for (knn::ValueTraits v : {whole(0, 10), knn::ValueTraits{}}) {
    if (v.known) v.whole = false;
    in.values = v;
    EXPECT_EQ(knn::compute_floor(in).rate_name, "tf32_tflops");
  }
  EXPECT_TRUE(knn::int8_exact(whole(0, 255), 32768));
  EXPECT_FALSE(knn::int8_exact(whole(0, 255), 32769));
  EXPECT_FALSE(knn::int8_exact(whole(16777216.f * 2, 16777216.f * 2 + 1), 8));
}

// fp16 products (v15's tile filter) are exact by its proof for finite values and k <= 16: their rate,
// after int8's; TF32 above 16 dimensions, for unexamined values, a degenerate span, or where a device
// used has no fp16 rate (a file from before it, or its GEMM failed), which the note says.
TEST(Floor, Fp16RateWhereTheTileFiltersProofHolds) {
  FloorInput in = shape(1 << 20, 1 << 20, 12, 5, "gpu");
  in.rates[0].fp16_tflops = 800;
  knn::ValueTraits v;
  v.known = v.finite = true, v.lowest = 0.f, v.highest = 1.f;
  in.values = v;
  const double ops = 2.0 * double(1 << 20) * double(1 << 20) * 12;
  ResultFloor f = knn::compute_floor(in);
  EXPECT_EQ(f.bound, FloorBound::compute);
  EXPECT_EQ(f.rate_name, "fp16_tflops");
  EXPECT_DOUBLE_EQ(f.compute_ms, compute_ms(ops, 800));
  EXPECT_TRUE(f.note.empty()) << f.note;
  in.values = whole(0, 255);  // int8 first
  EXPECT_EQ(knn::compute_floor(in).rate_name, "int8_tops");
  in.values = v;
  in.k = 17;
  EXPECT_EQ(knn::compute_floor(in).rate_name, "tf32_tflops");
  in.k = 16;
  EXPECT_EQ(knn::compute_floor(in).rate_name, "fp16_tflops");
  in.values = knn::ValueTraits{};
  EXPECT_EQ(knn::compute_floor(in).rate_name, "tf32_tflops");
  in.values = v, in.values.highest = 1e-30f;  // a span whose scale would leave float's range
  EXPECT_EQ(knn::compute_floor(in).rate_name, "tf32_tflops");
  in.values = v, in.values.finite = false;
  EXPECT_EQ(knn::compute_floor(in).rate_name, "tf32_tflops");
  in.values = v;
  in.rates.push_back(in.rates[0]);
  in.rates[1].fp16_tflops = 0;  // one device without it
  f = knn::compute_floor(in);
  EXPECT_EQ(f.rate_name, "tf32_tflops");
  EXPECT_DOUBLE_EQ(f.compute_ms, compute_ms(2.0 * double(1 << 20) * double(1 << 20) * 16, 800));
  EXPECT_NE(f.note.find("no fp16_tflops measured"), std::string::npos) << f.note;
  knn::ValueTraits one_value = v;
  one_value.lowest = one_value.highest = 3.f;
  EXPECT_TRUE(knn::fp16_exact(one_value, 16));
  EXPECT_FALSE(knn::fp16_exact(v, 17));
}

TEST(Floor, SelfJoinCopiesTheReferencesOnceAndComputesHalfTheDistances) {
  FloorInput in = shape(200000, 200000, 64, 4, "gpu");
  in.self_join = true;
  const ResultFloor f = knn::compute_floor(in);
  const double refs = 4.0 * 2e5 * 64, answers = 8.0 * 2e5 * 4;
  EXPECT_DOUBLE_EQ(f.copy_ms, std::max(copy_ms(refs, 25), copy_ms(refs, 25) + copy_ms(answers, 26)));
  EXPECT_DOUBLE_EQ(f.compute_ms, compute_ms(2e5 * 2e5 * 64, 400));
  EXPECT_EQ(f.bound, FloorBound::compute);
}

TEST(Floor, SeveralDevicesShareTheWorkAtTheSumOfTheirRates) {
  FloorInput in = shape(100000, 4000000, 32, 8, "multi-gpu");
  in.memory = knn::HostMemory::pageable;
  in.rates = {rates(24, 26, 400, 1200), rates(20, 22, 300, 1000)};
  const ResultFloor f = knn::compute_floor(in);
  const double inputs = 4.0 * (1e5 + 4e6) * 32, answers = 8.0 * 1e5 * 8;
  // Pageable: h2d 12 + 10, d2h 26/3 + 22/3; the answers may overlap another device's inputs.
  const double copy = std::max(copy_ms(inputs, 12 + 10), copy_ms(answers, 26.0 / 3 + 22.0 / 3));
  const double compute = compute_ms(2.0 * 1e5 * 4e6 * 32, 700);
  EXPECT_DOUBLE_EQ(f.copy_ms, copy);
  EXPECT_DOUBLE_EQ(f.compute_ms, compute);
  EXPECT_EQ(f.bound, compute > copy ? FloorBound::compute : FloorBound::copy);
  EXPECT_DOUBLE_EQ(f.floor_ms, std::max(copy, compute));
  EXPECT_DOUBLE_EQ(f.rate, compute > copy ? 700 : 22);
  // A device without a rate: no floor.
  in.rates[1].h2d_pageable_gbps = 0;
  EXPECT_EQ(knn::compute_floor(in).bound, FloorBound::none);
}

TEST(Floor, TreesHaveTheCopyFloorOnlyAndTheHostNone) {
  const ResultFloor tree = knn::compute_floor(shape(200000, 200000, 64, 1, "tree"));
  EXPECT_EQ(tree.bound, FloorBound::copy);
  EXPECT_EQ(tree.compute_ms, 0);
  EXPECT_DOUBLE_EQ(tree.floor_ms, copy_ms(4.0 * 4e5 * 64, 25));
  EXPECT_NE(tree.note.find("copy floor only"), std::string::npos);
  // A cpu-family version that used a GPU (its work handed to a brute-force engine) has the brute
  // force floor: the devices used decide, not the family.
  FloorInput handed = shape(1000, 1000, 8, 1, "cpu");
  handed.rates = {rates(25, 26, 400, 1200)};
  EXPECT_EQ(knn::compute_floor(handed).bound, knn::compute_floor(shape(1000, 1000, 8, 1, "gpu")).bound);
  EXPECT_DOUBLE_EQ(knn::compute_floor(handed).floor_ms, knn::compute_floor(shape(1000, 1000, 8, 1, "gpu")).floor_ms);
  for (const std::string family : {"cpu", "peer", "tree"}) {
    FloorInput host = shape(1000, 1000, 8, 1, family);
    host.rates.clear();  // ran on no device
    const ResultFloor f = knn::compute_floor(host);
    EXPECT_TRUE(f.decided) << family;
    EXPECT_EQ(f.bound, FloorBound::none) << family;
    EXPECT_EQ(f.floor_ms, 0) << family;
    EXPECT_NE(f.note.find("no GPU floor"), std::string::npos) << family;
  }
}

// A result, its run's devices and rates: floor_of finds the rates of the devices used.
knn::Result timed_result(const std::string& family, std::vector<int> devices) {
  knn::Result r;
  r.problem_case.id = 3, r.problem_case.dim = 64, r.problem_case.m = 200000, r.problem_case.n = 200000, r.problem_case.topk = 1;
  r.version = family == "gpu" ? "v9" : "v0";
  r.family = family;
  r.status = knn::Status::pass;
  r.devices_used = std::move(devices);
  r.host_memory = knn::HostMemory::pinned;
  r.samples_ms = {12.5, 12.0, 13.0, 12.25, 12.75};
  r.stats = knn::summarize(r.samples_ms);
  return r;
}

knn::RunInfo run_with_rates() {
  knn::RunInfo info;
  info.started_utc = "2026-01-01T00:00:00Z";
  knn::DeviceInfo d;
  d.ordinal = 0, d.name = "GPU", d.cc_major = 9, d.sm_count = 132;
  info.devices = {d};
  info.device_rates = {rates(25, 26, 400, 1200)};
  return info;
}

TEST(Floor, MissingRatesGiveNoFloorAndSaySo) {
  knn::RunInfo info = run_with_rates();
  const knn::Result r = timed_result("gpu", {0});
  const ResultFloor with = knn::floor_of(info, r);
  EXPECT_EQ(with.bound, FloorBound::compute);
  EXPECT_DOUBLE_EQ(with.x_floor, r.stats.median / with.floor_ms);
  info.device_rates.clear();
  info.rates_note = "not measured (--no-rates)";
  const ResultFloor without = knn::floor_of(info, r);
  EXPECT_TRUE(without.decided);
  EXPECT_EQ(without.bound, FloorBound::none);
  EXPECT_NE(without.note.find("no rates for device 0 (not measured (--no-rates))"), std::string::npos) << without.note;
  knn::Result skipped = r;
  skipped.status = knn::Status::skip;
  EXPECT_FALSE(knn::floor_of(run_with_rates(), skipped).decided);
}

// ---------------------------------------------------------------- results files

std::string written(const knn::RunInfo& info, const std::vector<knn::Result>& results, const std::string& name) {
  const std::string path = knn::testing::tmp_path(name);
  std::ofstream(path) << knn::results_to_json(info, results).dump();
  return path;
}

json document(const knn::RunInfo& info, std::vector<knn::Result> results) {
  for (knn::Result& r : results) r.floor = knn::floor_of(info, r);
  return json::parse(knn::results_to_json(info, results).dump());
}

TEST(FloorSchema, RatesAndFloorsReadBack) {
  const knn::RunInfo info = run_with_rates();
  std::vector<knn::Result> results{timed_result("gpu", {0}), timed_result("cpu", {}), timed_result("tree", {0})};
  results[2].version = "v16";
  for (knn::Result& r : results) r.floor = knn::floor_of(info, r);
  const std::string file = written(info, results, "floor_round.json");
  const knn::ResultsDocument back = knn::read_results_file(file);
  ASSERT_EQ(back.info.device_rates.size(), 1u);
  for (const char* name : knn::kRateNames) EXPECT_DOUBLE_EQ(knn::rate_named(back.info.device_rates[0], name), knn::rate_named(info.device_rates[0], name)) << name;
  EXPECT_DOUBLE_EQ(back.info.device_rates[0].ms, 90);
  ASSERT_EQ(back.results.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const ResultFloor &a = results[i].floor, &b = back.results[i].floor;
    EXPECT_TRUE(b.decided);
    EXPECT_EQ(b.bound, a.bound) << i;
    EXPECT_DOUBLE_EQ(b.floor_ms, a.floor_ms) << i;
    EXPECT_DOUBLE_EQ(b.x_floor, a.x_floor) << i;
    EXPECT_DOUBLE_EQ(b.copy_ms, a.copy_ms) << i;
    EXPECT_DOUBLE_EQ(b.compute_ms, a.compute_ms) << i;
    EXPECT_EQ(b.rate_name, a.rate_name) << i;
    EXPECT_DOUBLE_EQ(b.rate, a.rate) << i;
    EXPECT_EQ(b.note, a.note) << i;
  }
  EXPECT_EQ(back.results[1].floor.bound, FloorBound::none);
  // The tables show them.
  EXPECT_EQ(knn::x_floor_text(back.results[0]), fmt::format("{:.2f}", back.results[0].floor.x_floor));
  EXPECT_EQ(knn::floor_ms_text(back.results[1]), "none");
  const auto head = knn::summary_table(back.results)[0];
  const auto row = knn::floor_row(back.results, head);
  ASSERT_EQ(row.size(), head.size());
  EXPECT_NE(knn::rates_text(back.info, 0).find("int8 1200.0 TOP/s"), std::string::npos);
  // `knnbench report`: the fastest version's × floor per case, each result's floor and x floor.
  const std::string md = knn::testing::tmp_path("floor_round.md");
  const auto rep = knn::testing::run(KNN_BINARY, fmt::format("report {} --md {}", file, md));
  ASSERT_EQ(rep.code, 0) << rep.out;
  std::ifstream in(md);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const knn::Result& fastest = back.results[0].stats.median <= back.results[2].stats.median ? back.results[0] : back.results[2];
  EXPECT_NE(text.find(fmt::format("| × floor (fastest) | {:.2f} {} |", fastest.floor.x_floor, knn::to_string(fastest.floor.bound))), std::string::npos) << text;
  EXPECT_NE(text.find("| floor ms | x floor |"), std::string::npos) << text;
  EXPECT_NE(text.find(fmt::format("| {} ({}) | {:.2f} |", knn::format_ms(back.results[0].floor.floor_ms), "compute", back.results[0].floor.x_floor)),
            std::string::npos) << text;
  EXPECT_NE(text.find("| none |"), std::string::npos) << text;
}

// Each malformed field is refused, naming it.
TEST(FloorSchema, MalformedFieldsAreRefused) {
  const json good = document(run_with_rates(), {timed_result("gpu", {0})});
  const auto refused = [](const json& doc, const std::string& field) {
    const std::string path = knn::testing::tmp_path("floor_bad.json");
    std::ofstream(path) << doc.dump();
    try {
      knn::read_results_file(path);
    } catch (const knn::SchemaError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << field << ": read without an error";
  };
  json bad = good;
  bad["devices"][0]["rates"]["tf32_tflops"] = -1;
  refused(bad, "devices[0].rates.tf32_tflops: -1, expected a finite number > 0");
  bad = good;
  bad["devices"][0]["rates"]["fp16_tflops"] = -1;  // optional, but never negative
  refused(bad, "devices[0].rates.fp16_tflops: -1, expected a finite number > 0");
  bad = good;
  bad["devices"][0]["rates"]["int8_tops"] = "fast";
  refused(bad, "devices[0].rates.int8_tops");
  bad = good;
  bad["devices"][0]["rates"].erase("h2d_pageable_gbps");
  refused(bad, "devices[0].rates.h2d_pageable_gbps: missing");
  bad = good;
  bad["rates_note"] = 3;
  refused(bad, "rates_note");
  for (const auto& [key, value, named] : std::vector<std::tuple<std::string, json, std::string>>{
           {"bound", "disk", "floor.bound"},
           {"floor_ms", good["results"][0]["floor"]["floor_ms"].get<double>() * 2, "floor.floor_ms"},
           {"rate", -5, "floor.rate"},
           {"rate_name", "h2d_pinned_gbps", "floor.rate_name"},
           {"x_floor", 0.5, "floor.x_floor"},
           {"copy_ms", "slow", "floor.copy_ms"},
           {"extra", 1, "floor.extra"}}) {
    bad = good;
    bad["results"][0]["floor"][key] = value;
    refused(bad, named);
  }
  bad = good;
  bad["results"][0]["floor"]["bound"] = "none";
  refused(bad, "but the bound is none");
}

// Files written before the floors: no rates, no floor decided, and the tables say nothing of one.
TEST(FloorSchema, OlderFilesWithoutTheFieldsRead) {
  const knn::ResultsDocument doc = knn::read_results_file(std::string(KNN_SOURCE_DIR) + "/results/h100/default.json.gz");
  ASSERT_FALSE(doc.info.devices.empty());
  for (const DeviceRates& r : doc.info.device_rates) EXPECT_FALSE(r.measured());
  ASSERT_FALSE(doc.results.empty());
  for (const knn::Result& r : doc.results) {
    EXPECT_FALSE(r.floor.decided) << r.version;
    EXPECT_EQ(knn::floor_ms_text(r), "");
  }
  EXPECT_TRUE(knn::floor_row(doc.results, knn::summary_table(doc.results)[0]).empty());
  EXPECT_EQ(knn::rates_text(doc.info, 0), "rates not measured");
  // Rates recorded before fp16's: read, fp16 0, the tables say "not measured".
  const knn::ResultsDocument older = knn::read_results_file(std::string(KNN_SOURCE_DIR) + "/results/h100/floor/tile-seeds.json.gz");
  ASSERT_FALSE(older.info.device_rates.empty());
  EXPECT_GT(older.info.device_rates[0].tf32_tflops, 0);
  EXPECT_EQ(older.info.device_rates[0].fp16_tflops, 0);
  EXPECT_NE(knn::rates_text(older.info, 0).find("TFLOP/s, fp16 not measured"), std::string::npos) << knn::rates_text(older.info, 0);
}

// A run here: without CUDA (or a device) no rates, and the file says why; a cpu version's floor is
// decided as none.
TEST(FloorSchema, ARunWithoutRatesSaysWhy) {
  const std::string out = knn::testing::tmp_path("floor_run.json");
  const auto r = knn::testing::run(KNN_BINARY, fmt::format("--config {}/configs/default.json --case 0 --version v0 --min-time 0.01 --max-noise 0 --json {}",
                                                           KNN_SOURCE_DIR, out));
  ASSERT_EQ(r.code, 0) << r.out;
  const json doc = json::parse(std::ifstream(out));
  if (!doc["devices"].empty()) GTEST_SKIP() << "this machine has a GPU: the rates are measured (GpuRates checks them)";
  ASSERT_TRUE(doc["rates_note"].is_string()) << doc.dump().substr(0, 400);
  EXPECT_NE(doc["rates_note"].get<std::string>().find("no rates"), std::string::npos);
  for (const auto& res : doc["results"]) {
    EXPECT_EQ(res["floor"]["bound"], "none");
    EXPECT_TRUE(res["floor"]["floor_ms"].is_null());
  }
  EXPECT_EQ(knn::read_results_file(out).results[0].floor.bound, FloorBound::none);
}

// ---------------------------------------------------------------- on a GPU

TEST(GpuRates, MeasuredRatesArePositiveAndOrdered) {
  const knn::DeviceDiscovery disc = knn::discover_devices();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU rates test skipped, not run";
  knn::warm_up_devices(disc.devices);
  const knn::RatesMeasurement m = knn::measure_device_rates(disc.devices, true, disc.note);
  ASSERT_EQ(m.rates.size(), disc.devices.size()) << m.note;
  for (const DeviceRates& r : m.rates) {
    for (const char* name : knn::kRateNames) EXPECT_GT(knn::rate_named(r, name), 0) << name;
    EXPECT_GE(r.int8_tops, r.tf32_tflops);
    EXPECT_GE(r.tf32_tflops, r.sgemm_tflops);
    EXPECT_GE(r.h2d_pinned_gbps, r.h2d_pageable_gbps * 0.8);  // pinned is the faster, within noise
    EXPECT_LT(r.ms, 1000);
  }
}

}  // namespace

namespace {

// On a GPU, a brute-force version's result carries a floor from this process's rates, and the
// floor is a floor: the call takes at least about that long (the rates are the best of 64 MiB
// copies and 8192³ GEMMs, so a call may beat them by a few per cent, never by 10).
TEST(GpuRates, ABruteForceResultHasAFloorItDoesNotBeat) {
  const knn::DeviceDiscovery disc = knn::discover_devices();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU floor test skipped, not run";
  const std::string out = knn::testing::tmp_path("floor_gpu.json");
  const auto r = knn::testing::run(KNN_BINARY, fmt::format("--config {}/configs/default.json --case 11 --version v15 --devices 0 --max-time 3 "
                                                           "--json {}", KNN_SOURCE_DIR, out));
  ASSERT_EQ(r.code, 0) << r.out;
  const knn::ResultsDocument doc = knn::read_results_file(out);
  ASSERT_EQ(doc.info.device_rates.size(), 1u);
  EXPECT_TRUE(doc.info.device_rates[0].measured()) << doc.info.rates_note;
  ASSERT_EQ(doc.results.size(), 1u);
  const ResultFloor& f = doc.results[0].floor;
  ASSERT_TRUE(f.has_floor()) << f.note;
  EXPECT_GT(f.x_floor, 0.9) << "median " << doc.results[0].stats.median << " ms, floor " << f.floor_ms << " ms (" << knn::to_string(f.bound) << ")";
}

}  // namespace
