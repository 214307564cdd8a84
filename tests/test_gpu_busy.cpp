// A GPU result's busy time (src/gpu_busy.*): the union of the traced intervals, the launch-bound
// rule, its field in results files (written, read back, malformed ones refused), compare's HOST
// DRIFT for launch-bound GPU results, the tables' column; on a GPU, the trace itself.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "cli_support.hpp"
#include "compare.hpp"
#include "devices.hpp"
#include "gpu_busy.hpp"
#include "report.hpp"
#include "results_schema.hpp"
#include "stats.hpp"

#if KNN_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using json = nlohmann::json;
using knn::ResultGpuBusy;
using knn::Verdict;

ResultGpuBusy busy(double busy_ms, double span_ms) {
  ResultGpuBusy b;
  b.decided = true;
  b.busy_ms = busy_ms;
  b.span_ms = span_ms;
  return b;
}

TEST(BusyTime, CoveredLengthIsTheUnionOfIntervals) {
  EXPECT_EQ(knn::covered_length({}), 0);
  EXPECT_EQ(knn::covered_length({{1, 3}}), 2);
  EXPECT_EQ(knn::covered_length({{5, 7}, {1, 3}}), 4);           // disjoint, unsorted
  EXPECT_EQ(knn::covered_length({{1, 4}, {2, 6}}), 5);           // overlapping
  EXPECT_EQ(knn::covered_length({{1, 10}, {2, 3}, {4, 5}}), 9);  // nested
  EXPECT_EQ(knn::covered_length({{1, 2}, {2, 3}}), 2);           // touching
  EXPECT_EQ(knn::covered_length({{3, 3}, {5, 4}, {0, 1}}), 1);   // empty and reversed ones count nothing
  // Two streams' kernels interleaved with a gap: [0,4) ∪ [1,2) ∪ [6,8) ∪ [7,9) = 4 + 3.
  EXPECT_EQ(knn::covered_length({{0, 4}, {6, 8}, {1, 2}, {7, 9}}), 7);
}

TEST(BusyTime, HostBoundBelowNinetyPerCentOfTheMedian) {
  EXPECT_DOUBLE_EQ(knn::gpu_busy_share(busy(0.3, 1.2), 1.0), 0.3);
  EXPECT_DOUBLE_EQ(knn::gpu_busy_share(busy(1.5, 1.6), 1.0), 1.0);  // capped: the median came from quieter calls
  EXPECT_TRUE(knn::host_bound(busy(0.89, 1.0), 1.0));
  EXPECT_FALSE(knn::host_bound(busy(0.9, 1.0), 1.0));
  EXPECT_TRUE(knn::host_bound(busy(0.0, 1.0), 1.0));  // a call that kept no GPU busy at all
  EXPECT_FALSE(knn::host_bound(busy(0.1, 1.0), 0.0));  // no median: nothing to compare with
  ResultGpuBusy not_traced = busy(0, 0);
  not_traced.note = "not traced: a reason";
  EXPECT_FALSE(not_traced.measured());
  EXPECT_FALSE(knn::host_bound(not_traced, 1.0));
  EXPECT_FALSE(knn::host_bound(ResultGpuBusy{}, 1.0));  // not decided
}

// Without a GPU (or without CUPTI in the build) the trace says why and does not run the call; with
// CUPTI but no device activity it runs the call and finds no busy time.
TEST(BusyTime, TracingAHostOnlyCallFindsNoBusyTimeOrSaysWhy) {
  bool ran = false;
  const ResultGpuBusy b = knn::trace_gpu_busy([&] {
    ran = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  ASSERT_TRUE(b.decided);
  if (!b.note.empty()) {
    EXPECT_EQ(b.note.rfind("not traced", 0), 0u) << b.note;
    EXPECT_FALSE(ran);
    EXPECT_FALSE(b.measured());
    return;
  }
  EXPECT_TRUE(ran);
  EXPECT_EQ(b.busy_ms, 0);
  EXPECT_GE(b.span_ms, 4.5);
}

// ---------------------------------------------------------------- files, compare, tables

knn::Result gpu_result(int case_id, const std::string& version, double center, unsigned seed, double canary_cpu_ms, const ResultGpuBusy& b) {
  knn::Result r;
  r.problem_case.id = case_id;
  r.problem_case.dim = 3;
  r.problem_case.m = 1;
  r.problem_case.n = 1024;
  r.version = version;
  r.family = "gpu";
  r.status = knn::Status::pass;
  r.devices_used = {0};
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(center, center * 0.005);
  for (int i = 0; i < 30; ++i) r.samples_ms.push_back(noise(rng));
  r.stats = knn::summarize(r.samples_ms);
  r.canary = knn::ResultCanary{canary_cpu_ms, canary_cpu_ms, 10.0 / canary_cpu_ms, 10.0 / canary_cpu_ms};
  r.gpu_busy = b;
  return r;
}

// Side B 1.3x slower on both results, its host `host` times slower: v2 kept its GPU busy 20 % of
// its call, v4 98 % (GPU-bound).
std::pair<json, json> twin_files(double host) {
  std::vector<knn::Result> a, b;
  a.push_back(gpu_result(5, "v2", 2.0, 1, 1.0, busy(0.4, 2.2)));
  b.push_back(gpu_result(5, "v2", 2.6, 2, host, busy(0.4, 2.9)));
  a.push_back(gpu_result(5, "v4", 2.0, 3, 1.0, busy(1.96, 2.0)));
  b.push_back(gpu_result(5, "v4", 2.6, 4, host, busy(2.55, 2.6)));
  knn::RunInfo info;
  info.complete = true;
  return {json::parse(knn::results_to_json(info, a).dump()), json::parse(knn::results_to_json(info, b).dump())};
}

TEST(BusyTime, ALaunchBoundGpuResultIsHostDriftWhenTheHostsDiffer) {
  {
    const auto [a, b] = twin_files(1.3);
    const knn::CompareReport rep = knn::compare_documents(a, b, knn::CompareOptions{});
    ASSERT_EQ(rep.pairs.size(), 2u);
    for (const auto& p : rep.pairs) EXPECT_EQ(p.verdict, p.version == "v2" ? Verdict::host_drift : Verdict::slower) << p.version;
    EXPECT_EQ(rep.slower, 1);
    EXPECT_NE(knn::format_compare(rep, false).find("GPUs busy under 90 % of the call"), std::string::npos);
  }
  {  // the same hosts: both are SLOWER, the launch-bound one too
    const auto [a, b] = twin_files(1.0);
    const knn::CompareReport rep = knn::compare_documents(a, b, knn::CompareOptions{});
    for (const auto& p : rep.pairs) EXPECT_EQ(p.verdict, Verdict::slower) << p.version;
    EXPECT_EQ(rep.slower, 2);
  }
}

TEST(BusyTime, WrittenReadBackAndShownInTheTable) {
  const auto [a, unused] = twin_files(1.0);
  const knn::ResultsDocument doc = knn::read_results_document(a, "a.json");
  ASSERT_EQ(doc.results.size(), 2u);
  EXPECT_TRUE(doc.results[0].gpu_busy.measured());
  EXPECT_DOUBLE_EQ(doc.results[0].gpu_busy.busy_ms, 0.4);
  EXPECT_DOUBLE_EQ(doc.results[0].gpu_busy.span_ms, 2.2);
  EXPECT_TRUE(knn::host_bound(doc.results[0].gpu_busy, doc.results[0].stats.median));
  EXPECT_FALSE(knn::host_bound(doc.results[1].gpu_busy, doc.results[1].stats.median));
  EXPECT_EQ(knn::gpu_busy_text(doc.results[0]), "20 host-bound");
  EXPECT_EQ(knn::gpu_busy_text(doc.results[1]), "98");

  // A note instead of the numbers reads back as not traced, and shows "-".
  json noted = a;
  noted["results"][0]["gpu_busy"] = {{"busy_ms", nullptr}, {"span_ms", nullptr}, {"note", "not traced: a call takes 2000 ms, over 1000 ms"}};
  const knn::Result r = knn::read_results_document(noted, "n.json").results[0];
  EXPECT_TRUE(r.gpu_busy.decided);
  EXPECT_FALSE(r.gpu_busy.measured());
  EXPECT_EQ(knn::gpu_busy_text(r), "-");
  // An older file without the field: not decided, nothing shown.
  json older = a;
  older["results"][0].erase("gpu_busy");
  EXPECT_FALSE(knn::read_results_document(older, "o.json").results[0].gpu_busy.decided);
  EXPECT_EQ(knn::gpu_busy_text(knn::read_results_document(older, "o.json").results[0]), "");
}

std::string refusal(const std::function<void(json&)>& spoil) {
  auto [doc, unused] = twin_files(1.0);
  spoil(doc);
  try {
    knn::read_results_document(doc, "spoiled.json");
  } catch (const knn::SchemaError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(BusyTime, MalformedFieldsAreRefusedNamingFileFieldAndValue) {
  const auto busy_of = [](json& d) -> json& { return d["results"][0]["gpu_busy"]; };
  struct Case {
    std::function<void(json&)> spoil;
    std::string field, what;
  };
  const std::vector<Case> cases = {
      {[&](json& d) { busy_of(d)["extra"] = 1; }, "results[0].gpu_busy.extra", "unknown field"},
      {[&](json& d) { busy_of(d) = 3; }, "results[0].gpu_busy", "expected an object or null"},
      {[&](json& d) { busy_of(d)["busy_ms"] = -0.1; }, "results[0].gpu_busy.busy_ms", "-0.1"},
      {[&](json& d) { busy_of(d)["busy_ms"] = "0.4"; }, "results[0].gpu_busy.busy_ms", "expected a finite number"},
      {[&](json& d) { busy_of(d)["span_ms"] = 0; }, "results[0].gpu_busy.span_ms", "expected a finite number > 0"},
      {[&](json& d) { busy_of(d)["span_ms"] = nullptr; }, "results[0].gpu_busy.span_ms", "null"},
      {[&](json& d) { busy_of(d)["busy_ms"] = 3.0; }, "results[0].gpu_busy.busy_ms", "over span_ms 2.2"},
      {[&](json& d) { busy_of(d)["note"] = "not traced: why"; }, "results[0].gpu_busy.busy_ms", "expected null"},
      {[&](json& d) { busy_of(d)["note"] = 7; }, "results[0].gpu_busy.note", "expected a text or null"},
      {[&](json& d) { busy_of(d).erase("note"); }, "results[0].gpu_busy.note", "missing"},
      {[&](json& d) { d["results"][0]["devices_used"] = json::array(); }, "results[0].gpu_busy", "used no GPU"},
      {[&](json& d) {
         d["results"][0]["status"] = "skip";
         d["results"][0]["reason"] = "no device";
         d["results"][0]["samples_ms"] = json::array();
         d["results"][0]["stats"] = nullptr;
         d["results"][0]["phases"] = json::object();
         d["results"][0]["validation"] = nullptr;
       },
       "results[0].gpu_busy", "on a skip result"},
  };
  for (const Case& c : cases) {
    const std::string msg = refusal(c.spoil);
    EXPECT_NE(msg.find("spoiled.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------- on a GPU

#if KNN_HAVE_CUDA
// Device memsets back to back keep the GPU busy nearly the whole call; a host wait before one small
// memset leaves it idle nearly all of it.
TEST(GpuBusyTrace, ADeviceBoundCallIsBusyAndAHostWaitIsNot) {
  const knn::DeviceDiscovery disc = knn::discover_devices();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU busy trace test skipped, not run";
  void* buffer = nullptr;
  const std::size_t bytes = std::size_t(1) << 30;
  ASSERT_EQ(cudaMalloc(&buffer, bytes), cudaSuccess);
  const auto memsets = [&] {
    for (int i = 0; i < 20; ++i) cudaMemsetAsync(buffer, i, bytes);
    cudaDeviceSynchronize();
  };
  memsets();  // untimed: the first touch of the buffer
  const auto t0 = std::chrono::steady_clock::now();
  memsets();
  const double untraced_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Compared with the untraced call, as the harness compares with the median: enabling the trace
  // costs its first launch milliseconds (9.2 ms traced against 6.6 ms busy on an H100).
  const ResultGpuBusy device_bound = knn::trace_gpu_busy(memsets);
  const ResultGpuBusy host_bound = knn::trace_gpu_busy([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    cudaMemsetAsync(buffer, 1, std::size_t(1) << 20);
    cudaDeviceSynchronize();
  });
  cudaFree(buffer);
  ASSERT_TRUE(device_bound.measured()) << device_bound.note;
  ASSERT_TRUE(host_bound.measured()) << host_bound.note;
  EXPECT_GT(device_bound.busy_ms, 0.9 * untraced_ms) << device_bound.busy_ms << " ms busy, the call untraced " << untraced_ms << " ms";
  EXPECT_LE(device_bound.busy_ms, device_bound.span_ms);
  EXPECT_GT(host_bound.busy_ms, 0);
  EXPECT_LT(host_bound.busy_ms, 0.1 * host_bound.span_ms) << host_bound.busy_ms << " of " << host_bound.span_ms << " ms";
  EXPECT_GE(host_bound.span_ms, 19.5);
}
#endif

// Through knnbench: a copy-bound brute force (v15, case 11: the references stream in under the
// search) is GPU-bound and its file says so; --no-gpu-busy leaves the field out.
TEST(GpuBusyTrace, ABruteForceResultRecordsItsBusyTime) {
  const knn::DeviceDiscovery disc = knn::discover_devices();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU busy trace test skipped, not run";
  const std::string out = knn::testing::tmp_path("gpu_busy.json");
  const std::string common = fmt::format("--config {}/configs/default.json --case 11 --version v15 --devices 0 --max-time 2 --no-rates", KNN_SOURCE_DIR);
  auto r = knn::testing::run(KNN_BINARY, common + " --json " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const knn::Result res = knn::read_results_file(out).results.at(0);
  ASSERT_TRUE(res.gpu_busy.measured()) << res.gpu_busy.note;
  EXPECT_GT(knn::gpu_busy_share(res.gpu_busy, res.stats.median), 0.5) << res.gpu_busy.busy_ms << " ms busy, median " << res.stats.median;
  EXPECT_LE(res.gpu_busy.busy_ms, res.gpu_busy.span_ms);
  r = knn::testing::run(KNN_BINARY, common + " --no-gpu-busy --json " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(knn::read_results_file(out).results.at(0).gpu_busy.decided);
}

}  // namespace
