#include "measure.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "canary.hpp"
#include "measure_calls.hpp"
#include "clocks.hpp"
#include "core/errors.hpp"
#include "devices.hpp"
#include "grade.hpp"
#include "answers_npy.hpp"
#include "host_memory.hpp"
#include "interrupt.hpp"
#include "mpi_env.hpp"
#include "skip_reasons.hpp"
#include "sysinfo.hpp"

namespace knn {
namespace {

long long now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

}  // namespace

double relative_median_noise(std::vector<double> samples) {
  // The noise compare judges by (stats.hpp: the distribution-free ~95 % interval of the median,
  // half its width over the median), infinite while no interval reaches 95 % (under 6 samples),
  // so the stopping rule never stops on a guess.
  const double inf = std::numeric_limits<double>::infinity();
  const MedianInterval ci = median_interval(samples);
  if (!(ci.coverage >= 0.95)) return inf;
  const double median = median_of(std::move(samples));  // the interval once, as Stats::median_noise_pct defines it
  return median > 0 ? (ci.high - ci.low) / 2 / median : inf;
}

int calls_per_sample(double call_ms) {
  if (!(call_ms < kMinSampleMs)) return 1;
  return int(std::min<double>(kMaxCallsPerSample, std::ceil(kMinSampleMs / std::max(call_ms, kMinSampleMs / kMaxCallsPerSample))));
}

void add_unaccounted_phase(Result& r) {
  const std::size_t n = r.samples_ms.size();
  if (n == 0) return;
  // Multi-GPU versions report each device phase also as the slowest device's; "gpu_thread" is the
  // host time of a device's whole share and holds the others, so it stands for all of them.
  std::set<std::string> device_names;
  for (const auto& [dev, phases] : r.device_phase_samples_ms)
    for (const auto& [name, v] : phases) device_names.insert(name);
  const bool by_thread = r.phase_samples_ms.count("gpu_thread") > 0;
  std::vector<double> sum(n, 0.0);
  bool any = false;
  for (const auto& [name, v] : r.phase_samples_ms) {
    if (name == "build" || name == "query" || name == kOtherPhase) continue;  // harness phases: the wall time itself
    if (by_thread && name != "gpu_thread" && device_names.count(name)) continue;
    if (v.size() != n) return;  // a phase missing from some calls: no per-sample sum to compare
    for (std::size_t i = 0; i < n; ++i) sum[i] += v[i];
    any = true;
  }
  if (!any) return;
  const double wall = median_of(r.samples_ms);
  if (!(std::abs(median_of(sum) - wall) > kPhasesAddUpTolerance * wall)) return;
  auto& other = r.phase_samples_ms[kOtherPhase];
  other.resize(n);
  for (std::size_t i = 0; i < n; ++i) other[i] = r.samples_ms[i] - sum[i];
}

std::optional<std::string> why_skipped(const VersionDesc& desc, const Problem& p, const Environment& env) {
  if (desc.gpus != GpuNeed::none && env.devices.empty()) return skip_reason::no_device();
  if (p.self_join && !desc.self_join) return skip_reason::no_self_join();
  if (desc.supports)
    if (auto why = desc.supports(p, env)) return why;
  if (desc.host_bytes) {
    const double need = double(desc.host_bytes(p, env)) + 8.0 * double(p.result_slots());
    const double have = double(usable_host_memory());
    if (have > 0 && need > have) return skip_reason::working_memory(need, have);
  }
  if (desc.device_bytes && !env.devices.empty()) {
    // cudaErrorMemoryAllocation during the calls is still caught by measure_version.
    const std::size_t need = desc.device_bytes(p, env);
    for (const DeviceInfo& d : devices_of(desc, env)) {
      const std::size_t have = device_free_memory(d.ordinal);
      if (have > 0 && need > have) return skip_reason::device_memory(need, d.ordinal, have);
    }
  }
  return std::nullopt;
}

Watchdog::Watchdog(std::string version, double max_time_s) : version_(std::move(version)), max_time_s_(max_time_s) {
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

void Watchdog::call_started() { call_started_ns_ = now_ns(); }
void Watchdog::call_finished() { call_started_ns_ = 0; }

void Watchdog::watch() {
  while (!done_.load()) {
    const long long t0 = call_started_ns_.load();
    if (t0 != 0 && double(now_ns() - t0) * 1e-9 > max_time_s_) {
      const std::string msg = fmt::format("knnbench: stopped: a call of {} exceeded --max-time {} s\n", version_, max_time_s_);
      (void)!::write(STDERR_FILENO, msg.data(), msg.size());
      std::_Exit(124);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void name_version(Result& r, const VersionDesc& desc) {
  r.version = desc.id;
  r.title = desc.title;
  r.family = to_string(desc.family);
}

void mark_skipped(Result& r, std::string reason) {
  r.status = Status::skip;
  r.reason = std::move(reason);
  clear_samples(r);
}

std::optional<Answer> measure(const VersionDesc& desc, const Problem& p, const Environment& env, const MeasureOptions& opts, Result& r,
                              MeasureRecord* record) {
  reset_calls_made();
  MeasureRecord local;
  MeasureRecord& rec = record ? *record : local;
  rec = MeasureRecord{};
  // Under mpirun a sharding version runs on every rank, which must make the same calls: rank 0's
  // times drive the stopping rule, and an interrupt on one stops all.
  const bool lockstep = desc.shards_references && mpi_world().many();
  const auto stopping = [&] { return lockstep ? mpi_any(stop_requested()) : stop_requested(); };
  std::optional<Watchdog> watchdog;
  if (opts.kill_after_max_time) watchdog.emplace(desc.id, opts.max_time_s);
  VersionCalls calls(desc, p, env, r, lockstep, watchdog ? &*watchdog : nullptr);
  const auto call = [&](bool keep, int batch) { return calls.call(keep, batch); };

  const std::vector<DeviceInfo> gpus = devices_of(desc, env);
  bool measured = false;
  try {
    const double max_ms = opts.max_time_s * 1e3;
    const double target = opts.max_noise_pct / 100;
    bool settled = false;
    double fastest = std::numeric_limits<double>::infinity();
    double warm_ms = 0;  // warm-up shares the --max-time budget: a huge --warmup cannot run forever
    for (int w = 0; w < opts.warmup && !stopping() && warm_ms <= max_ms; ++w) {
      const double ms = call(false, 1);
      warm_ms += ms;
      if (ms > max_ms) {
        // A single call over the whole budget: measure it once more would double a long run.
        // Keep the warm-up call as the one sample and say so.
        clear_samples(r);
        call(true, 1);
        r.note = fmt::format("one sample: a call takes longer than --max-time {} s", opts.max_time_s);
        measured = true;
        break;
      }
      // The first guess at the batch follows the fastest warm-up call: one preempted call must not undo it.
      fastest = std::min(fastest, ms);
      rec.calls_per_sample = calls_per_sample(fastest);
    }
    for (const DeviceInfo& d : gpus) rec.clocks.push_back(ClockRecord{d.ordinal, read_clock(d), {}});
    if (!measured) {
      // One attempt: samples until the targets above are met or a limit is reached.
      const auto attempt = [&] {
        double total = 0;
        for (;;) {
          if (stopping()) {
            rec.interrupted = true;
            break;
          }
          const double ms = call(true, rec.calls_per_sample);
          total += ms;
          if (!settled && !(settled = batch_settled(ms, rec))) {
            clear_samples(r);
            total = 0;
            continue;
          }
          if (targets_met(r.samples_ms, total, opts) || limit_reached(r.samples_ms.size(), total, ms, opts)) break;
        }
      };
      attempt();
      // --resample: an attempt that missed the noise target is followed by another (the machine
      // may have been busy for a while: docs/measurement.md); the least noisy attempt is kept and
      // the note gives the others' medians and noises.
      std::vector<std::string> others;
      for (int again = 0; again < opts.resample && !rec.interrupted && target > 0 &&
                          !(relative_median_noise(r.samples_ms) <= target);
           ++again) {
        Result kept;  // the best attempt so far: its samples only
        std::swap(kept.samples_ms, r.samples_ms);
        std::swap(kept.phase_samples_ms, r.phase_samples_ms);
        std::swap(kept.device_phase_samples_ms, r.device_phase_samples_ms);
        attempt();
        if (rec.interrupted) break;
        const double kept_noise = relative_median_noise(kept.samples_ms);
        const bool better = relative_median_noise(r.samples_ms) < kept_noise;
        if (!better) {  // the earlier attempt stays; this one goes to the note
          std::swap(kept.samples_ms, r.samples_ms);
          std::swap(kept.phase_samples_ms, r.phase_samples_ms);
          std::swap(kept.device_phase_samples_ms, r.device_phase_samples_ms);
        }
        others.push_back(fmt::format("median {:.4g} ms, noise ±{:.2f} %", summarize(kept.samples_ms).median,
                                     100 * relative_median_noise(kept.samples_ms)));
      }
      if (!others.empty()) {
        std::string list;
        for (const std::string& o : others) list += (list.empty() ? "" : "; ") + o;
        add_note(r, fmt::format("the least noisy of {} attempts (--resample; the other{}: {})", others.size() + 1,
                                others.size() == 1 ? "" : "s", list));
      }
      if (int(r.samples_ms.size()) < opts.min_samples && !rec.interrupted)
        add_note(r, fmt::format("{} samples: --max-time {} s reached", r.samples_ms.size(), opts.max_time_s));
    }
    for (std::size_t i = 0; i < gpus.size(); ++i) rec.clocks[i].after = read_clock(gpus[i]);
    if (!rec.interrupted) probe_gpu_busy(calls, !gpus.empty(), opts, lockstep, r);
  } catch (...) {
    record_exception(r, p);  // a skip (out of memory) or a failure
    return std::nullopt;
  }
  if (!finish_measurement(rec, opts, measured, r)) return std::nullopt;
  return std::move(calls.answer());
}

void grade_answer(Result& r, const Answer& answer, const Problem& p, const Reference* reference, const MeasureOptions& opts) {
  if (!opts.dump_answers.empty()) {
    try {
      add_note(r, "answer in " + dump_answers(opts.dump_answers, r.problem_case.id, r.version, answer.index_data(), answer.distances.data(),
                                              p.m, p.topk));
    } catch (const std::exception& e) {
      // No torn file is left (answers_npy.hpp); the measurement is kept and the run goes on, its
      // exit code 2 at the end (runner.cpp) says an answer is missing.
      add_note(r, kAnswerNotDumped + std::string(e.what()));
      fmt::print(stderr, "knnbench: --dump-answers: case {} {}: answer not written: {}; the measurement is kept, the run goes on\n",
                 r.problem_case.id, r.version, e.what());
    }
  }
  if (opts.validate && reference) {
    grade(r, validate_all(p, *reference, answer.index_data()), opts.strict_peers);
    return;
  }
  r.status = Status::pass;
}

void measure_unless_skipped(const VersionDesc& desc, const Problem& p, const Environment& env, const MeasureOptions& opts,
                            const std::optional<std::string>& why, const Reference* reference, Result& r, MeasureRecord* record) {
  r.host_memory = env.host_memory;
  if (why) return mark_skipped(r, *why);
  CanaryProbe canary = input_canary(opts, env, p);
  if (std::optional<Answer> answer = measure(desc, p, env, opts, r, record)) grade_answer(r, *answer, p, reference, opts);
  canary.finish(r.canary, r.host_facts);
}

void measure_version(const VersionDesc& desc, const Problem& p, const Environment& env, const MeasureOptions& opts,
                     const Reference* reference, Result& r, MeasureRecord* record) {
  name_version(r, desc);
  // Under mpirun a sharding version runs on every rank, which must make the same calls: one rank's
  // skip skips all.
  const bool lockstep = desc.shards_references && mpi_world().many();
  const std::optional<std::string> why = why_skipped(desc, p, env);
  measure_unless_skipped(desc, p, env, opts, lockstep ? mpi_first_reason(why) : why, reference, r, record);
}

void copy_record(const MeasureRecord& rec, Result& r) {
  r.calls_per_sample = rec.calls_per_sample;
  r.noise_target_missed = rec.noise_target_missed;
  r.interrupted = rec.interrupted;
  if (rec.clocks.empty()) return;
  // One device's clocks per result: the first whose clocks moved, else the first.
  const ClockRecord* pick = &rec.clocks.front();
  for (const ClockRecord& c : rec.clocks)
    if (!clock_warning(c).empty()) {
      pick = &c;
      break;
    }
  const auto mhz = [](const ClockReading& k) { return k.recorded ? double(k.sm_mhz) : 0.0; };
  const auto why = [](const ClockReading& k) { return k.recorded ? throttle_names(k.throttle) : std::string(); };
  r.clocks = ResultClocks{mhz(pick->before), mhz(pick->after), why(pick->before), why(pick->after)};
}

void describe_record(const MeasureRecord& rec, const MeasureOptions& opts, Result& r) {
  if (rec.calls_per_sample > 1) add_note(r, fmt::format("{} calls per sample (times are per call)", rec.calls_per_sample));
  if (rec.noise_target_missed)
    add_note(r, fmt::format("noise ±{:.2f} % above --max-noise {} %", 100 * rec.noise, opts.max_noise_pct));
  for (const ClockRecord& c : rec.clocks) {
    const std::string warning = clock_warning(c);
    if (warning.empty()) continue;
    add_note(r, warning);
    fmt::print(stderr, "knnbench: warning: {} on case {}: {}\n", r.version, r.problem_case.id, warning);
  }
}

}  // namespace knn
