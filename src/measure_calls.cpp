#include "measure_calls.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <new>

#include "core/errors.hpp"
#include "gpu_busy.hpp"
#include "stats.hpp"
#include "mpi_env.hpp"
#include "skip_reasons.hpp"
#include "sysinfo.hpp"

namespace knn {
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::atomic<int> g_calls_made{0};

}  // namespace

int calls_made_now() { return g_calls_made.load(std::memory_order_relaxed); }
void reset_calls_made() { g_calls_made.store(0, std::memory_order_relaxed); }

void clear_samples(Result& r) {
  r.samples_ms.clear();
  r.phase_samples_ms.clear();
  r.device_phase_samples_ms.clear();
}

void add_note(Result& r, const std::string& note) { r.note += (r.note.empty() ? "" : "; ") + note; }

void probe_gpu_busy(VersionCalls& calls, bool uses_gpu, const MeasureOptions& opts, bool lockstep, Result& r) {
  if (!opts.gpu_busy || !uses_gpu || r.samples_ms.empty()) return;
  const double median = median_of(r.samples_ms);
  ResultGpuBusy not_traced;
  not_traced.decided = true;
  if (lockstep) {
    not_traced.note = "not traced under mpirun (every rank would have to make the extra call)";
  } else if (!(median <= kGpuBusyMaxCallMs)) {
    not_traced.note = fmt::format("not traced: a call takes {:.4g} ms, over {:g} ms", median, kGpuBusyMaxCallMs);
  } else {
    bool traced_call = false;
    try {
      r.gpu_busy = trace_gpu_busy([&] {
        traced_call = true;
        calls.call(false, 1);
      });
    } catch (const std::exception& e) {  // the timed samples stand; the busy time says why it is missing
      not_traced.note = fmt::format("not traced: the traced call failed: {}", e.what());
      r.gpu_busy = not_traced;
    }
    // The answer validated and the path recorded come from a call without the trace, as the timed ones.
    if (traced_call) calls.call(false, 1);
    return;
  }
  r.gpu_busy = not_traced;
}

std::vector<DeviceInfo> devices_of(const VersionDesc& desc, const Environment& env) {
  if (desc.gpus == GpuNeed::none || env.devices.empty()) return {};
  if (desc.gpus == GpuNeed::one) return {env.devices.front()};
  return env.devices;
}

VersionCalls::VersionCalls(const VersionDesc& desc, const Problem& p, const Environment& env, Result& r, bool lockstep, Watchdog* watchdog)
    : desc_(desc),
      p_(p),
      env_(env),
      r_(r),
      lockstep_(lockstep),
      watchdog_(watchdog),
      // The answers land where the inputs live: pinned when the run is pinned (downloads at full speed).
      answer_{HostArray(p.result_slots(), env.host_memory), HostArray(p.result_slots(), env.host_memory)} {}

double VersionCalls::call(bool keep, int batch) {
  const std::size_t slots = p_.result_slots();
  std::int32_t* indices = answer_.indices.as<std::int32_t>();
  float* distances = answer_.distances.data();
  std::fill(indices, indices + slots, -1);
  std::fill(distances, distances + slots, std::numeric_limits<float>::quiet_NaN());
  sink_.clear();
  RunContext ctx{sink_, env_, {}, {}};
  std::vector<decltype(desc_.make())> instances;
  for (int i = 0; i < batch; ++i) instances.push_back(desc_.make());
  const auto t0 = std::chrono::steady_clock::now();
  if (watchdog_) watchdog_->call_started();
  for (auto& instance : instances) instance->build(p_, ctx);
  const auto t1 = std::chrono::steady_clock::now();
  for (auto& instance : instances) instance->query(p_, Neighbors{indices, distances}, ctx);
  const auto t2 = std::chrono::steady_clock::now();
  if (watchdog_) watchdog_->call_finished();
  const double total = lockstep_ ? mpi_root_value(elapsed_ms(t0, t2)) : elapsed_ms(t0, t2), per = 1.0 / batch;
  g_calls_made.fetch_add(1, std::memory_order_relaxed);
  if (keep) {
    r_.samples_ms.push_back(total * per);
    if (desc_.has_build) r_.phase_samples_ms["build"].push_back(elapsed_ms(t0, t1) * per);
    r_.phase_samples_ms["query"].push_back(elapsed_ms(t1, t2) * per);
    for (const auto& [name, ms] : sink_.phases())
      if (name != "build" && name != "query") r_.phase_samples_ms[name].push_back(ms * per);
    for (const auto& [dev, phases] : sink_.device_phases())
      for (const auto& [name, ms] : phases) r_.device_phase_samples_ms[dev][name].push_back(ms * per);
  }
  r_.path = resolve_path(ctx);
  r_.params_chosen = ctx.chosen;
  r_.devices_used = ctx.devices_used;
  return total;
}

CanaryProbe input_canary(const MeasureOptions& opts, const Environment& env, const Problem& p) {
  return CanaryProbe(opts.canary, env.host_memory,
                     {{p.queries, p.query_floats() * sizeof(float)}, {p.references, p.reference_floats() * sizeof(float)}});
}

bool batch_settled(double batch_ms, MeasureRecord& rec) {
  // A first call is often slower (cold caches, page faults) than the calls after it: until a batch
  // spans kMinSampleMs, size it again from its own time per call and drop it.
  const int batch = calls_per_sample(batch_ms / rec.calls_per_sample);
  if (batch <= rec.calls_per_sample || ++rec.calibration_batches > kMaxCalibrationBatches) return true;
  rec.calibration_calls += rec.calls_per_sample;
  rec.calls_per_sample = batch;
  return false;
}

bool targets_met(const std::vector<double>& samples, double total_ms, const MeasureOptions& opts) {
  const double target = opts.max_noise_pct / 100;
  const bool enough = int(samples.size()) >= opts.min_samples && total_ms >= opts.min_time_s * 1e3;
  return enough && (target <= 0 || relative_median_noise(samples) <= target);
}

bool limit_reached(std::size_t samples, double total_ms, double last_ms, const MeasureOptions& opts) {
  return int(samples) >= opts.max_samples || total_ms + last_ms > opts.max_time_s * 1e3;
}

void record_exception(Result& r, const Problem& p) {
  try {
    throw;
  } catch (const OutOfMemoryError& e) {
    mark_skipped(r, e.what());
  } catch (const std::bad_alloc&) {
    const double inputs = 4.0 * double(p.self_join ? 0 : std::size_t(p.m) * p.dim) + 4.0 * double(std::size_t(p.n) * p.dim);
    mark_skipped(r, skip_reason::out_of_host_memory("during the calls", inputs + 8.0 * double(p.result_slots()), double(usable_host_memory())));
  } catch (const std::exception& e) {
    r.status = Status::fail;
    r.reason = std::string("error: ") + e.what();
  }
}

bool finish_measurement(MeasureRecord& rec, const MeasureOptions& opts, bool one_sample, Result& r) {
  const double target = opts.max_noise_pct / 100;
  rec.noise = relative_median_noise(r.samples_ms);
  rec.noise_target_missed = !one_sample && !rec.interrupted && target > 0 && !(rec.noise <= target);
  copy_record(rec, r);
  if (rec.interrupted) {  // not a measurement: no time, whatever was sampled before the stop
    mark_skipped(r, skip_reason::interrupted(r.samples_ms.size()));
    return false;
  }
  add_unaccounted_phase(r);
  r.stats = summarize(r.samples_ms);
  describe_record(rec, opts, r);
  return true;
}

}  // namespace knn
