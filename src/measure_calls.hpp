#pragma once
// The pieces both samplers share: measure() (measure.cpp), one setting's calls in one loop, and
// measure_interleaved() (interleave.cpp), two settings' calls alternating in one loop. A version's
// timed calls (VersionCalls), the batch-size calibration, the stopping rule, what an exception in a
// call makes of the result, and the finish of a measurement. Nothing here decides the order of calls.
#include <limits>
#include <optional>
#include <vector>

#include "canary.hpp"
#include "measure.hpp"

namespace knn {

// Starts the count calls_made_now() reports (a new measurement).
void reset_calls_made();

// r without samples (raw, phases, device phases).
void clear_samples(Result& r);
// Appends `note` to r.note ("; " between notes).
void add_note(Result& r, const std::string& note);

// The devices a GPU version uses: the first selected one, or all of them.
std::vector<DeviceInfo> devices_of(const VersionDesc& desc, const Environment& env);

// One version's calls on one problem, each sample timed on its own into `r`: `batch` fresh
// instances, made and outputs poisoned first, untimed; then timed, all builds (trees), then all
// queries. Every time kept is per call: the batch's divided by `batch`. Under `lockstep` (a sharding
// version under mpirun) rank 0's time stands for every rank's. The answer buffers are the call's own.
class VersionCalls {
 public:
  VersionCalls(const VersionDesc& desc, const Problem& p, const Environment& env, Result& r, bool lockstep, Watchdog* watchdog = nullptr);
  // One sample of `batch` calls, kept in r's samples when `keep`; returns the batch's wall time (ms).
  double call(bool keep, int batch);
  Answer& answer() { return answer_; }
  Result& result() { return r_; }

 private:
  const VersionDesc& desc_;
  const Problem& p_;
  const Environment& env_;
  Result& r_;
  bool lockstep_;
  Watchdog* watchdog_;
  Answer answer_;
  TimingSink sink_;
};

// After the timed samples of a result that used a GPU: one more call, untimed, under CUPTI's trace
// (gpu_busy.hpp) into r.gpu_busy; a note instead where it is not traced (--no-gpu-busy leaves it
// undecided; under `lockstep`, for a call over kGpuBusyMaxCallMs or a traced call that threw, the
// note says why). A traced call is followed by one more untraced call, whose answer is the one
// validated.
void probe_gpu_busy(VersionCalls& calls, bool uses_gpu, const MeasureOptions& opts, bool lockstep, Result& r);

// The host canary (canary.hpp) started around a measurement of `p`'s inputs; off under --no-canary.
CanaryProbe input_canary(const MeasureOptions& opts, const Environment& env, const Problem& p);

// After a batch of `batch_ms` while the batch size is not settled: whether it is (the batch spans
// kMinSampleMs, or kMaxCalibrationBatches were tried). When not, `rec` takes the batch size its time
// per call asks for and counts the batch as calibration (its sample is to be dropped).
bool batch_settled(double batch_ms, MeasureRecord& rec);

// The stopping rule's targets: at least --min-samples and --min-time of timed work (`total_ms`), and
// the noise of the median at most --max-noise (when it is set).
bool targets_met(const std::vector<double>& samples, double total_ms, const MeasureOptions& opts);
// Its limits: --max-samples reached, or the next call of `last_ms` would pass --max-time.
bool limit_reached(std::size_t samples, double total_ms, double last_ms, const MeasureOptions& opts);

// Inside a catch block: r as the exception in flight makes it: out of device or host memory, a skip
// (with what the inputs needed); any other std::exception, a failure naming it. Others propagate.
void record_exception(Result& r, const Problem& p);

// The end of a measurement whose sampling is done: the record's noise and missed target (not when
// `one_sample`: a call over the budget), copied into r; interrupted, r becomes a skip and false comes
// back; else the "other" phase, the statistics and the notes, and true.
bool finish_measurement(MeasureRecord& rec, const MeasureOptions& opts, bool one_sample, Result& r);

}  // namespace knn
