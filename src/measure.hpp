#pragma once
// The sampler: one version on one problem. Skip checks, warm-up, the timed calls and their
// stopping rule, validation against the reference. The watchdog that ends an --isolate child
// whose call runs past --max-time lives here too.
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "clocks.hpp"
#include "core/environment.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "options.hpp"
#include "result.hpp"
#include "validate.hpp"

namespace knn {

// What the sampler found beyond the samples themselves. Result has no place for these yet:
// describe_record() words them into Result::note.
struct MeasureRecord {
  int calls_per_sample = 1;          // > 1: short calls timed in batches; every time is per call
  int calibration_batches = 0;       // batches timed only to size the batch (dropped) ...
  int calibration_calls = 0;         // ... and the calls they made
  double noise = 0;                  // relative_median_noise of the samples kept
  bool noise_target_missed = false;  // a limit stopped sampling above --max-noise
  bool interrupted = false;          // SIGINT/SIGTERM arrived before sampling was done
  std::vector<ClockRecord> clocks;   // GPU versions: each device used, before and after sampling
};

// Calls (warm-up and timed batches) that the measure_version running now has made so far, for a
// progress display on another thread; 0 when a measure_version starts.
int calls_made_now();

// Measures one version on one problem: skip checks, warm-up, sampling, validation against
// `reference` (may be null when validation is off). `r` arrives with the case
// fields filled in and leaves complete; `record`, when given, receives what MeasureRecord says.
// A sampling cut short by an interrupt is a skip ("interrupted ..."), never a pass.
void measure_version(const VersionDesc& desc, const Problem& problem, const Environment& env, const MeasureOptions& opts,
                     const Reference* reference, Result& r, MeasureRecord* record = nullptr);

// Stores in r what the results file keeps of `rec`: batch size, missed noise target, interrupt,
// and the clocks of one device.
void copy_record(const MeasureRecord& rec, Result& r);

// Adds to r.note what `rec` says (batches, a missed noise target, clock warnings; the last also
// on stderr).
void describe_record(const MeasureRecord& rec, const MeasureOptions& opts, Result& r);

// The noise of the median: half the width of the distribution-free ~95 % confidence interval of
// the median (order statistics x(j), x(n+1−j)), divided by the median. Infinite below 6 samples
// (no such interval exists) or when the median is not positive. Robust: a few outliers move it
// by one order statistic at most.
double relative_median_noise(std::vector<double> samples);

// Short calls are timed in batches, so that one sample spans at least kMinSampleMs (100 µs, a
// few thousand times steady_clock's ~20–60 ns granularity); at most kMaxCallsPerSample calls.
constexpr double kMinSampleMs = 0.1;
constexpr int kMaxCallsPerSample = 10000;
constexpr int kMaxCalibrationBatches = 4;
int calls_per_sample(double call_ms);

// Phases add up: where the version's own phases (h2d, kernel, d2h, alloc, ...; for multi-GPU
// versions gpu_thread, which holds each device's phases, and merge) sum to a median more than
// kPhasesAddUpTolerance away from the wall time's, adds phase kOtherPhase = wall − sum per
// sample (negative where phases overlap). build and query are the wall time split in two, not
// summed. Results without phases of their own are left alone.
constexpr double kPhasesAddUpTolerance = 0.05;
constexpr const char* kOtherPhase = "other";
void add_unaccounted_phase(Result& r);

// Why this version cannot run on this problem here (no device, its supports() reason, over a
// device's free memory), checked before anything is allocated; none when it can run.
std::optional<std::string> why_skipped(const VersionDesc& desc, const Problem& problem, const Environment& env);

// Ends the process with exit code 124 (after a line on stderr naming `version`) when a call
// started with call_started() is still running `max_time_s` later. For --isolate children: the
// parent records the version as stopped and the run goes on.
class Watchdog {
 public:
  Watchdog(std::string version, double max_time_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void call_started();
  void call_finished();

 private:
  void watch();
  std::string version_;
  double max_time_s_;
  std::atomic<bool> done_{false};
  std::atomic<long long> call_started_ns_{0};
  std::thread thread_;
};

}  // namespace knn
