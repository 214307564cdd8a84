#pragma once
// The runner: drives one (case, version) at a time, measures it, validates it, and hands each
// finished result to the reporters.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/environment.hpp"
#include "matrix.hpp"
#include "core/registry.hpp"
#include "result.hpp"

namespace knn {

struct MeasureOptions {
  int warmup = 1;          // untimed calls before sampling
  int min_samples = 5;     // sample until at least this many ...
  double min_time_s = 0.5; // ... and at least this much timed work,
  double max_time_s = 10;  // unless the next call would exceed this budget per (case, version)
  int max_samples = 200;   // and never more calls than this (raw samples are kept in the JSON)
  bool validate = true;
  int validate_queries = 0;  // > 0: validate only this many queries, spread evenly (large m)
  // In an --isolate child: a call still running after max_time_s ends the process (exit 124),
  // so the parent can record the version as stopped.
  bool kill_after_max_time = false;
};

struct RunOptions {
  std::string config = "configs/default.json";
  std::vector<std::string> case_specs;     // "11", "8-11", "0,3"
  std::vector<std::string> groups;         // "ta", "large", "smoke"
  std::vector<std::string> version_specs;  // "v8", "v1,v3"
  std::string devices = "all";             // "all" or "0,1"
  std::string host_memory = "pinned";      // pinned | pageable
  std::optional<std::uint64_t> seed;       // overrides every case's seed
  MeasureOptions measure;
  bool quiet = false;
  bool list = false;
  bool isolate = false;         // run each (case, version) in a child process
  bool isolated_child = false;  // this process is such a child: no screen output
  std::string json_path, md_path, csv_path;
  std::vector<std::string> argv;
};

// Runs the benchmark and returns the exit code (0 ok, 1 a validation failure). Throws
// ConfigError for bad options or files (exit code 2).
int run_benchmark(const RunOptions& opts);

// Selection helpers (exposed for tests). Unknown ids throw ConfigError listing the valid ones.
std::vector<Case> select_cases(const Matrix& mx, const std::vector<std::string>& case_specs, const std::vector<std::string>& groups);
std::vector<const VersionDesc*> select_versions(const std::vector<std::string>& version_specs);
std::vector<DeviceInfo> select_devices(const std::vector<DeviceInfo>& all, const std::string& spec, const std::string& none_note);

// Measures one version on one problem: skip checks, warm-up, sampling, validation against
// `reference` (may be null when validation is off). `r` arrives with the case
// fields filled in and leaves complete.
void measure_version(const VersionDesc& desc, const Problem& problem, const Environment& env, const MeasureOptions& opts,
                     const Reference* reference, Result& r);

// Set by SIGINT/SIGTERM: the runner finishes the call in flight, writes what it has, and stops.
bool stop_requested();
void install_signal_handlers();

}  // namespace knn
