#pragma once
// The sampler: one version on one problem. Skip checks, warm-up, the timed calls and their
// stopping rule; then, a step of its own, the verdict on the last answer (grade_answer). The
// watchdog that ends an --isolate child whose call runs past --max-time lives here too.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "clocks.hpp"
#include "core/environment.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "host_memory.hpp"
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

// Calls (warm-up and timed batches) that the measurement running now has made so far, for a
// progress display on another thread; 0 when a measurement starts.
int calls_made_now();

// The last answer of a measured version: m × topk indices and distances, where the inputs live
// (pinned when the run is pinned).
struct Answer {
  HostArray indices, distances;
  const std::int32_t* index_data() const { return indices.as<std::int32_t>(); }
};

// r named after `desc`: its id, title and family.
void name_version(Result& r, const VersionDesc& desc);
// r as a skip for `reason`: no samples, no time.
void mark_skipped(Result& r, std::string reason);

// Measures one version on one problem: warm-up, sampling and its stopping rule. `r` arrives named
// and leaves with its samples and statistics, or as a skip (out of memory, interrupted: a sampling
// cut short is never a pass) or a failure (the version threw); `record`, when given, receives what
// MeasureRecord says. Returns the last call's answer when the version was measured. Neither a skip
// check (why_skipped comes first) nor a verdict (grade_answer comes after).
std::optional<Answer> measure(const VersionDesc& desc, const Problem& problem, const Environment& env, const MeasureOptions& opts,
                              Result& r, MeasureRecord* record = nullptr);

// After measuring: writes the answer for --dump-answers (ConfigError when it cannot), then grades
// it (grade.hpp) against `reference` when the run validates and has one; pass otherwise.
void grade_answer(Result& r, const Answer& answer, const Problem& problem, const Reference* reference, const MeasureOptions& opts);

// The steps of a version after its skip check: `r` skipped for `why` when there is one, else
// measured and graded. `r` takes the run's host memory either way.
void measure_unless_skipped(const VersionDesc& desc, const Problem& problem, const Environment& env, const MeasureOptions& opts,
                            const std::optional<std::string>& why, const Reference* reference, Result& r,
                            MeasureRecord* record = nullptr);

// One version on one problem, every step: `r` named, the skip check (under lockstep, every rank's
// reason), then measure_unless_skipped. `reference` may be null (validation off). The in-process
// executor takes the same steps, with its case's reference computed once a version is to run.
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
