// The sampler's arithmetic and stopping rule: noise of the median, batches of short calls, the
// "other" phase, and measure_version driven by test versions whose call times are known.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <cmath>
#include <limits>
#include <memory>

#include "measure.hpp"
#include "omp_env.hpp"
#include "skip_reasons.hpp"
#include "spin.hpp"
#include "sysinfo.hpp"

using namespace knn;

namespace {

using knn::testing::spin_ms;

// A version whose i-th call (counting every call, warm-up included) spins durations[i % size] ms
// and reports `phase_share` of that as a "kernel" phase when it is > 0.
struct Timed : VersionInstance {
  std::shared_ptr<int> calls;
  std::vector<double> durations;
  double phase_share;
  Timed(std::shared_ptr<int> c, std::vector<double> d, double share) : calls(std::move(c)), durations(std::move(d)), phase_share(share) {}
  void query(const Problem&, Neighbors out, RunContext& ctx) override {
    const double ms = durations[std::size_t(*calls) % durations.size()];
    ++*calls;
    spin_ms(ms);
    if (phase_share > 0) ctx.timing.add("kernel", phase_share * ms);
    out.indices[0] = 0;
    out.distances[0] = 0;
  }
};

VersionDesc timed_version(std::shared_ptr<int> calls, std::vector<double> durations, double phase_share = 0) {
  VersionDesc d;
  d.id = "timed";
  d.title = "test: spins for given times";
  d.make = [=] { return std::make_unique<Timed>(calls, durations, phase_share); };
  return d;
}

struct Tiny {
  float q[1] = {0}, r[1] = {0};
  Problem p{1, 1, 1, 1, q, r};
};

struct Sampled {
  std::shared_ptr<int> calls = std::make_shared<int>(0);  // every call the instances answered
  Result r;
  MeasureRecord rec;
};

Sampled sample(std::vector<double> durations, const MeasureOptions& o, double phase_share = 0) {
  Sampled run;
  Tiny t;
  measure_version(timed_version(run.calls, std::move(durations), phase_share), t.p, Environment{}, o, nullptr, run.r, &run.rec);
  return run;
}

MeasureOptions quick(int min_samples, int max_samples, double max_noise_pct) {
  MeasureOptions o;
  o.warmup = 1;
  o.min_samples = min_samples;
  o.max_samples = max_samples;
  o.min_time_s = 0;
  o.max_time_s = 30;
  o.max_noise_pct = max_noise_pct;
  o.validate = false;
  return o;
}

}  // namespace

TEST(MedianNoise, NeedsSixSamplesAndIsRelativeToTheMedian) {
  EXPECT_TRUE(std::isinf(relative_median_noise({1, 2, 3, 4, 5})));
  EXPECT_EQ(relative_median_noise({7, 7, 7, 7, 7, 7}), 0.0);
  // n = 6: the interval is [x(1), x(6)] (coverage 1 − 2/64); half of 11 − 10 over the median 10.
  EXPECT_DOUBLE_EQ(relative_median_noise({10, 10, 11, 10, 10, 10}), 0.05);
  EXPECT_DOUBLE_EQ(relative_median_noise({100, 100, 110, 100, 100, 100}), 0.05);
  EXPECT_TRUE(std::isinf(relative_median_noise({0, 0, 0, 0, 0, 0})));
}

TEST(MedianNoise, AnOutlierMovesItByOneOrderStatisticAtMost) {
  std::vector<double> s;
  for (int i = 0; i < 20; ++i) s.push_back(10.0 + 0.01 * i);  // 10.00 .. 10.19
  const double clean = relative_median_noise(s);
  s.back() = 1000;  // n = 20: the interval is [x(6), x(15)]; the outlier is x(20)
  EXPECT_DOUBLE_EQ(relative_median_noise(s), clean);
  EXPECT_NEAR(clean, 0.5 * (10.14 - 10.05) / 10.095, 1e-12);
}

TEST(Batches, ShortCallsAreTimedSeveralPerSample) {
  EXPECT_EQ(calls_per_sample(0.2), 1);
  EXPECT_EQ(calls_per_sample(kMinSampleMs), 1);
  EXPECT_EQ(calls_per_sample(0.00005), 2000);  // 50 ns calls: 2000 per 100 µs sample
  EXPECT_EQ(calls_per_sample(0.03), 4);        // ceil(100 / 30)
  EXPECT_EQ(calls_per_sample(0.0), kMaxCallsPerSample);
}

TEST(OtherPhase, TheDifferenceToTheWallTimeBecomesAPhase) {
  Result r;
  r.samples_ms = {10, 12, 11};
  r.phase_samples_ms["query"] = {10, 12, 11};
  r.phase_samples_ms["h2d"] = {2, 2, 2};
  r.phase_samples_ms["kernel"] = {3, 4, 3};
  add_unaccounted_phase(r);
  EXPECT_EQ(r.phase_samples_ms[kOtherPhase], (std::vector<double>{5, 6, 6}));

  Result close = r;  // within 5 %: left alone
  close.phase_samples_ms.erase(kOtherPhase);
  close.phase_samples_ms["kernel"] = {7.6, 9.6, 8.6};
  add_unaccounted_phase(close);
  EXPECT_EQ(close.phase_samples_ms.count(kOtherPhase), 0u);

  Result cpu;  // only the harness's build/query: nothing to add up
  cpu.samples_ms = {5, 5};
  cpu.phase_samples_ms["build"] = {1, 1};
  cpu.phase_samples_ms["query"] = {4, 4};
  add_unaccounted_phase(cpu);
  EXPECT_EQ(cpu.phase_samples_ms.count(kOtherPhase), 0u);
}

TEST(OtherPhase, MultiGpuPhasesCountOnceThroughGpuThread) {
  Result r;
  r.samples_ms = {10};
  r.phase_samples_ms["query"] = {10};
  r.phase_samples_ms["gpu_thread"] = {8};  // holds h2d and kernel
  r.phase_samples_ms["h2d"] = {3};
  r.phase_samples_ms["kernel"] = {4};
  r.phase_samples_ms["merge"] = {1};
  r.device_phase_samples_ms[0] = {{"gpu_thread", {8}}, {"h2d", {3}}, {"kernel", {4}}};
  add_unaccounted_phase(r);
  EXPECT_EQ(r.phase_samples_ms[kOtherPhase], std::vector<double>{1});  // 10 − (8 + 1)
}

// 15 samples, not 3: a batch of 0.1 ms preempted on a busy 2-core machine (of the order of a few % of
// batches when another process shares the core) counts 1 ms or more per call; the median of 3 was over
// kMinSampleMs when 2 of 3 were, that of 15 needs 8 of 15.
TEST(Sampler, ShortCallsAreBatchedAndReportedPerCall) {
  MeasureOptions o = quick(15, 15, 0);
  o.warmup = 3;  // the batch follows the fastest of them
  const Sampled run = sample({0.01}, o);
  ASSERT_EQ(run.r.status, Status::pass) << run.r.reason;
  EXPECT_GT(run.rec.calls_per_sample, 1);
  // the warm-up calls, batches that only sized the batch, then 15 samples of a batch each
  EXPECT_EQ(*run.calls, 3 + run.rec.calibration_calls + 15 * run.rec.calls_per_sample);
  ASSERT_EQ(run.r.samples_ms.size(), 15u);
  for (double ms : run.r.samples_ms) EXPECT_GE(ms, 0.01);
  EXPECT_LT(run.r.stats.median, kMinSampleMs);  // per call, not per batch
  EXPECT_NE(run.r.note.find("calls per sample"), std::string::npos) << run.r.note;
}

// A first call preempted past kMinSampleMs rightly leaves batches of one call: rare (a 5 µs call
// against scheduler ticks of a few ms, of the order of 1 run in 1000 when another process shares
// the core, by that estimate), and three runs in a row so preempted do not happen.
TEST(Sampler, WithoutWarmUpTheFirstCallsSizeTheBatchAndAreDropped) {
  MeasureOptions o = quick(2, 2, 0);
  o.warmup = 0;
  Sampled run = sample({0.005}, o);
  for (int again = 0; again < 2 && run.rec.calls_per_sample <= 1; ++again) run = sample({0.005}, o);
  ASSERT_GT(run.rec.calls_per_sample, 1);
  EXPECT_GE(run.rec.calibration_calls, 1);  // at least the first call, alone
  EXPECT_EQ(*run.calls, run.rec.calibration_calls + 2 * run.rec.calls_per_sample);
  EXPECT_EQ(run.r.samples_ms.size(), 2u);
}

TEST(Sampler, TheNoiseTargetKeepsSamplingPastMinSamples) {
  EXPECT_EQ(sample({0.3}, quick(2, 6, 0)).r.samples_ms.size(), 2u);   // no target: min-samples is enough
  EXPECT_EQ(sample({0.3}, quick(2, 6, 50)).r.samples_ms.size(), 6u);  // below 6 samples the noise of the median is unknown
}

TEST(Sampler, AMissedNoiseTargetIsRecorded) {
  // Calls alternate 1 ms and 3 ms: the median's interval spans both, noise ≈ 50 %.
  const Sampled run = sample({1, 3}, quick(2, 10, 1));
  ASSERT_EQ(run.r.status, Status::pass) << run.r.reason;
  EXPECT_EQ(run.r.samples_ms.size(), 10u);  // went on to --max-samples
  EXPECT_TRUE(run.rec.noise_target_missed);
  EXPECT_GT(run.rec.noise, 0.3);
  EXPECT_NE(run.r.note.find("above --max-noise 1 %"), std::string::npos) << run.r.note;
}

TEST(Sampler, PhasesThatDoNotCoverTheCallGetAnOtherPhase) {
  const Sampled run = sample({0.5}, quick(3, 3, 0), 0.4);
  ASSERT_EQ(run.r.status, Status::pass) << run.r.reason;
  const auto& other = run.r.phase_samples_ms.at(kOtherPhase);
  const auto& kernel = run.r.phase_samples_ms.at("kernel");
  ASSERT_EQ(other.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(other[i], run.r.samples_ms[i] - kernel[i]);
}

TEST(SkipReasons, SayWhatWasNeededAndWhatThereWas) {
  EXPECT_EQ(skip_reason::host_memory(3.0 * 1073741824.0, 1.5 * 1073741824.0), "needs 3.00 GiB of host memory, host has 1.50 GiB available");
  EXPECT_EQ(skip_reason::device_memory(std::size_t(2) << 30, 1, std::size_t(1) << 30), "needs 2.00 GiB, device 1 has 1.00 GiB free");
  EXPECT_NE(skip_reason::interrupted(2).find("interrupted"), std::string::npos);
}

TEST(Clocks, AWarningOnlyWhenTheClockMovedOrAThrottleReasonAppeared) {
  ClockRecord c;
  c.device = 1;
  c.before = {true, 1980, throttle::gpu_idle};
  c.after = {true, 1950, 0};  // −1.5 %, idle gone: fine
  EXPECT_EQ(clock_warning(c), "");
  c.after = {true, 1700, 0};
  EXPECT_EQ(clock_warning(c), "GPU 1: SM clock 1980 → 1700 MHz");
  c.after = {true, 1980, 0x4 | 0x40};
  EXPECT_EQ(clock_warning(c), "GPU 1: throttled: sw_power_cap, hw_thermal_slowdown");
  c.before.throttle = 0x4;  // already capped before: only the new reason counts
  EXPECT_EQ(clock_warning(c), "GPU 1: throttled: hw_thermal_slowdown");
  c.after.recorded = false;  // without NVML: nothing to say
  EXPECT_EQ(clock_warning(c), "");
  EXPECT_EQ(throttle_names(0), "none");
  EXPECT_EQ(throttle_names(0x1 | 0x1000), "gpu_idle, 0x1000");
}

TEST(Clocks, ACpuMachineRecordsNothingAndDoesNotFail) {
  DeviceInfo d;  // no such device: NVML absent, or no bus id
  EXPECT_FALSE(read_clock(d).recorded);
  d.pci_bus_id = "ffff:ff:1f";
  EXPECT_FALSE(read_clock(d).recorded);
}

TEST(HostEnvironment, OmpDefaultsNeverOverrideTheUser) {
  std::map<std::string, std::string> env{{"OMP_PROC_BIND", "spread"}};
  auto get = [&env](const char* n) -> const char* {
    const auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_TRUE(omp_defaults_missing(get, 2).empty());  // the user chose the binding: OMP_PLACES is left to them too
  const auto wait = omp_defaults_missing(get, 16);  // only the wait policy, on a large machine
  ASSERT_EQ(wait.size(), 1u);
  EXPECT_EQ(wait[0], (std::pair<std::string, std::string>{"OMP_WAIT_POLICY", "active"}));
  EXPECT_EQ(describe_omp_env(get), "OMP_PROC_BIND=spread (set by the user), OMP_PLACES unset, OMP_WAIT_POLICY unset");
  env = {{"OMP_PROC_BIND", "close"}, {"OMP_PLACES", "cores"}, {"OMP_WAIT_POLICY", "active"},
         {"KNNBENCH_OMP_DEFAULTS", "OMP_PROC_BIND,OMP_PLACES,OMP_WAIT_POLICY"}};
  EXPECT_EQ(describe_omp_env(get),
            "OMP_PROC_BIND=close (knnbench default), OMP_PLACES=cores (knnbench default), OMP_WAIT_POLICY=active (knnbench default)");
  EXPECT_TRUE(omp_defaults_missing(get, 16).empty());
  env.clear();
  EXPECT_EQ(omp_defaults_missing(get, 2).size(), omp_defaults().size());      // no spinning threads on a small machine
  EXPECT_EQ(omp_defaults_missing(get, 16).size(), omp_defaults().size() + 1);
  env = {{"OMP_WAIT_POLICY", "passive"}};
  EXPECT_EQ(omp_defaults_missing(get, 16).size(), omp_defaults().size());     // the user's wait policy stands
  env.clear();
  EXPECT_EQ(describe_omp_env(get), "OMP_PROC_BIND unset, OMP_PLACES unset, OMP_WAIT_POLICY unset");
}

TEST(HostEnvironment, LoadAverageAndGovernor) {
  double a = 0, b = 0, c = 0;
  ASSERT_TRUE(parse_loadavg("0.52 1.58 2.59 1/467 12345", a, b, c));
  EXPECT_EQ(a, 0.52);
  EXPECT_EQ(b, 1.58);
  EXPECT_EQ(c, 2.59);
  EXPECT_FALSE(parse_loadavg("", a, b, c));
  EXPECT_FALSE(parse_loadavg("high", a, b, c));
  EXPECT_EQ(read_first_word("/nonexistent/scaling_governor"), "unknown");
  const std::string path = ::testing::TempDir() + "governor";
  std::ofstream(path) << "performance\n";
  EXPECT_EQ(read_first_word(path), "performance");
  HostInfo h;
  h.cores = 8;
  h.omp_threads = 8;
  h.load_1min = 0.4;
  EXPECT_FALSE(host_busy(h));
  h.load_1min = 1.5;  // more than one core's worth of other work
  EXPECT_TRUE(host_busy(h));
  h.omp_threads = 4;  // four cores left free
  EXPECT_FALSE(host_busy(h));
}

// --resample: an attempt that missed the noise target is followed by another; the least noisy is
// kept and the note gives the other. Without it, one attempt only.
TEST(Resample, ANoisyAttemptIsSampledAgainAndTheLeastNoisyKept) {
  // Warm-up, then a first attempt of 12 samples alternating 1 and 20 ms (noise about 90 %), then
  // steady 3 ms calls. With 10 or more samples the noise's interval leaves out the extremes, so a
  // busy machine (CI's 2 cores under ctest -j2) must stretch several steady calls by more than 3 ms
  // each to make the second attempt look as noisy as the first: one stretched call did, with 6
  // samples and a first attempt of 2 and 6 ms.
  std::vector<double> d = {1};
  for (int i = 0; i < 12; ++i) d.push_back(i % 2 == 0 ? 1.0 : 20.0);
  d.insert(d.end(), 40, 3.0);
  MeasureOptions o = quick(10, 12, 5);
  o.resample = 1;
  const Sampled again = sample(d, o);
  EXPECT_NE(again.r.note.find("the least noisy of 2 attempts (--resample; the other: median "), std::string::npos)
      << again.r.note;
  ASSERT_GE(again.r.samples_ms.size(), 10u);
  std::vector<double> kept = again.r.samples_ms;  // the steady attempt's (the first's median is 10.5 or 20)
  std::sort(kept.begin(), kept.end());
  EXPECT_LT(kept[kept.size() / 2], 6.0) << "the first, noisier attempt was kept";
  EXPECT_GE(*again.calls, 1 + 12 + 10);

  o.resample = 0;  // one attempt: the noisy one, said to have missed its target
  const Sampled once = sample(d, o);
  EXPECT_EQ(*once.calls, 1 + 12);
  EXPECT_EQ(once.r.note.find("attempts"), std::string::npos) << once.r.note;
  EXPECT_TRUE(once.rec.noise_target_missed);
}
