#include "measure.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>

#include "core/errors.hpp"
#include "devices.hpp"
#include "interrupt.hpp"
#include "skip_reasons.hpp"

namespace knn {
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

long long now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

void clear_samples(Result& r) {
  r.samples_ms.clear();
  r.phase_samples_ms.clear();
  r.device_phase_samples_ms.clear();
}

}  // namespace

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

std::optional<std::string> why_skipped(const VersionDesc& desc, const Problem& p, const Environment& env) {
  if (desc.gpus != GpuNeed::none && env.devices.empty()) return skip_reason::no_device();
  if (desc.supports)
    if (auto why = desc.supports(p, env)) return why;
  if (desc.device_bytes && !env.devices.empty()) {
    // cudaErrorMemoryAllocation during the calls is still caught by measure_version.
    const std::size_t need = desc.device_bytes(p, env);
    const std::size_t used = desc.gpus == GpuNeed::one ? 1 : env.devices.size();
    for (std::size_t i = 0; i < used; ++i) {
      const std::size_t have = device_free_memory(env.devices[i].ordinal);
      if (have > 0 && need > have) return skip_reason::device_memory(need, env.devices[i].ordinal, have);
    }
  }
  return std::nullopt;
}

void measure_version(const VersionDesc& desc, const Problem& p, const Environment& env, const MeasureOptions& opts,
                     const Reference* reference, Result& r) {
  r.version = desc.id;
  r.title = desc.title;
  r.family = to_string(desc.family);
  r.host_memory = env.host_memory;
  if (auto why = why_skipped(desc, p, env)) {
    r.status = Status::skip;
    r.reason = *why;
    return;
  }

  const std::size_t slots = p.result_slots();
  std::vector<std::int32_t> indices(slots);
  std::vector<float> distances(slots);
  TimingSink sink;
  std::optional<Watchdog> watchdog;
  if (opts.kill_after_max_time) watchdog.emplace(desc.id, opts.max_time_s);

  // One timed call: a fresh instance, build (trees) and query, outputs poisoned first.
  auto call = [&](bool keep) {
    std::fill(indices.begin(), indices.end(), -1);
    std::fill(distances.begin(), distances.end(), std::numeric_limits<float>::quiet_NaN());
    sink.clear();
    RunContext ctx{sink, env, {}, {}};
    auto instance = desc.make();
    const auto t0 = std::chrono::steady_clock::now();
    if (watchdog) watchdog->call_started();
    instance->build(p, ctx);
    const auto t1 = std::chrono::steady_clock::now();
    instance->query(p, Neighbors{indices.data(), distances.data()}, ctx);
    const auto t2 = std::chrono::steady_clock::now();
    if (watchdog) watchdog->call_finished();
    const double total = elapsed_ms(t0, t2);
    if (keep) {
      r.samples_ms.push_back(total);
      if (desc.has_build) r.phase_samples_ms["build"].push_back(elapsed_ms(t0, t1));
      r.phase_samples_ms["query"].push_back(elapsed_ms(t1, t2));
      for (const auto& [name, ms] : sink.phases())
        if (name != "build" && name != "query") r.phase_samples_ms[name].push_back(ms);
      for (const auto& [dev, phases] : sink.device_phases())
        for (const auto& [name, ms] : phases) r.device_phase_samples_ms[dev][name].push_back(ms);
    }
    r.path = ctx.path;
    r.devices_used = ctx.devices_used;
    return total;
  };

  try {
    const double max_ms = opts.max_time_s * 1e3;
    bool measured = false;
    for (int w = 0; w < opts.warmup && !stop_requested(); ++w) {
      if (call(false) > max_ms) {
        // A single call over the whole budget: measure it once more would double a long run.
        // Keep the warm-up call as the one sample and say so.
        clear_samples(r);
        call(true);
        r.note = fmt::format("one sample: a call takes longer than --max-time {} s", opts.max_time_s);
        measured = true;
        break;
      }
    }
    if (!measured) {
      double total = 0;
      do {
        total += call(true);
        const double next = r.samples_ms.back();
        const bool enough = int(r.samples_ms.size()) >= opts.min_samples && total >= opts.min_time_s * 1e3;
        if (enough || int(r.samples_ms.size()) >= opts.max_samples || total + next > max_ms || stop_requested()) break;
      } while (true);
      if (int(r.samples_ms.size()) < opts.min_samples && !stop_requested())
        r.note = fmt::format("{} samples: --max-time {} s reached", r.samples_ms.size(), opts.max_time_s);
    }
  } catch (const OutOfMemoryError& e) {
    r.status = Status::skip;
    r.reason = e.what();
    clear_samples(r);
    return;
  } catch (const std::bad_alloc&) {
    r.status = Status::skip;
    r.reason = skip_reason::out_of_host_memory();
    clear_samples(r);
    return;
  } catch (const std::exception& e) {
    r.status = Status::fail;
    r.reason = std::string("error: ") + e.what();
    return;
  }
  r.stats = summarize(r.samples_ms);

  if (opts.validate && reference) {
    r.validated = true;
    r.validation = validate_neighbors(p, *reference, indices.data());
    if (!r.validation.pass) {
      r.status = Status::fail;
      r.reason = fmt::format("validation: {} mismatches, {} invalid of {} neighbours; first: {}", r.validation.mismatches, r.validation.invalid,
                             r.validation.checked, r.validation.first_problem);
      return;
    }
  }
  r.status = Status::pass;
}

}  // namespace knn
