#pragma once
// How much of a GPU result's call kept a GPU busy. After a GPU result's timed samples, one more
// call, untimed, runs under CUPTI's activity trace (kernels, copies, memsets on every device); the
// union of those intervals is the call's GPU busy time. A call whose GPUs were busy for under
// kGpuBoundShare of its median spends the rest on the host (launching, waiting on the host's own
// work), and that part follows the host's speed as a CPU version's does: `compare` treats it as a
// host-side result when the canaries say the host moved (compare_canary.cpp, docs/measurement.md
// "GPU busy time").
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace knn {

// A result's GPU busy time. `decided` false: not traced (a CPU result, an older file, --no-gpu-busy).
// Decided with note set and no times: why it could not be traced.
struct ResultGpuBusy {
  bool decided = false;
  double busy_ms = 0;  // the union of the traced call's GPU activity intervals
  double span_ms = 0;  // the traced call's own wall time (tracing slows launches: not the median)
  std::string note;    // why not traced
  bool measured() const { return decided && note.empty() && span_ms > 0; }
};

// At or above this share of its median (busy_ms / median) a call is GPU-bound; below, the host holds
// over a tenth of it, and a host whose speed swings 1.5x (as an H100 machine's did between and within
// runs: docs/measurement.md) moves such a call by more than compare's 5 %.
inline constexpr double kGpuBoundShare = 0.9;
// A call longer than this is not traced: the extra call would cost more than it tells (such calls
// are the GPUs' own work or already a host-side build's).
inline constexpr double kGpuBusyMaxCallMs = 1000;

// The length covered by the union of half-open intervals [start, end) (any unit; empty ones ignored).
double covered_length(std::vector<std::pair<double, double>> intervals);

// busy_ms / median_ms, at most 1; 0 when not measured or the median is not positive.
double gpu_busy_share(const ResultGpuBusy& busy, double median_ms);
// Measured and under kGpuBoundShare of the median: the host holds a part of the call that matters.
bool host_bound(const ResultGpuBusy& busy, double median_ms);

// Runs `call` once under CUPTI's activity trace and returns its GPU busy time; `call` must leave
// every device idle when it returns (the harness's calls synchronise). Not built with CUPTI, or
// CUPTI refused (another profiler attached, no driver): a record with the note saying why, after
// `call` did not run. Tracing is detached again before returning (cuptiFinalize): the timed calls
// of the results that follow run without it. Call it only where no other thread makes CUDA calls
// (the harness's thread between results: a version's own threads have joined when its call returns),
// as CUPTI's detach outside an API callback requires.
ResultGpuBusy trace_gpu_busy(const std::function<void()>& call);

}  // namespace knn
