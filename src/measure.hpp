#pragma once
// The sampler: one version on one problem. Skip checks, warm-up, the timed calls and their
// stopping rule, validation against the reference. The watchdog that ends an --isolate child
// whose call runs past --max-time lives here too.
#include <atomic>
#include <optional>
#include <string>
#include <thread>

#include "core/environment.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "options.hpp"
#include "result.hpp"
#include "validate.hpp"

namespace knn {

// Measures one version on one problem: skip checks, warm-up, sampling, validation against
// `reference` (may be null when validation is off). `r` arrives with the case
// fields filled in and leaves complete.
void measure_version(const VersionDesc& desc, const Problem& problem, const Environment& env, const MeasureOptions& opts,
                     const Reference* reference, Result& r);

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
