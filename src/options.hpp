#pragma once
// The options of a run, and their JSON form. An --isolate child receives them serialised once
// (to_json in the parent, from_json in the child), so a field added here reaches every child once
// it is named in the NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE list below; tests/test_isolate.cpp
// checks that every command-line flag survives the round trip.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "floor.hpp"  // DeviceRates

// nlohmann 3.11 has no std::optional: null when empty.
NLOHMANN_JSON_NAMESPACE_BEGIN
template <class T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) { j = v ? json(*v) : json(nullptr); }
  static void from_json(const json& j, std::optional<T>& v) { v = j.is_null() ? std::nullopt : std::optional<T>(j.get<T>()); }
};
NLOHMANN_JSON_NAMESPACE_END

namespace knn {

struct MeasureOptions {
  int warmup = 1;          // untimed calls before sampling
  int min_samples = 5;     // sample until at least this many ...
  double min_time_s = 0.5; // ... and at least this much timed work,
  double max_time_s = 10;  // unless the next call would exceed this budget per (case, version)
  int max_samples = 200;   // and never more calls than this (raw samples are kept in the JSON)
  // Once min_samples and min_time_s are met, sampling goes on until the relative noise of the
  // median (relative_median_noise, measure.hpp) is at most this many percent, or a limit above
  // is reached (the result then says it missed the target). 0: no noise target.
  double max_noise_pct = 1.0;
  // A result that missed the noise target is sampled again, up to this many more times, each
  // attempt with the budgets above; the least noisy attempt is kept (measure.cpp). 0: never.
  int resample = 0;
  bool validate = true;
  // A peer whose answer fails validation is graded inexact (exit code unchanged); with this, it fails.
  bool strict_peers = false;
  int validate_queries = 0;  // > 0: validate only this many queries, spread evenly (large m); 0: the case's own default
  std::string dump_answers;  // a folder: each result's last answer as .npy (answers_npy.hpp); empty: none
  // In an --isolate child: a call still running after max_time_s ends the process (exit 124),
  // so the parent can record the version as stopped.
  bool kill_after_max_time = false;
  // The host canary before and after each result (canary.hpp); --no-canary turns it off.
  bool canary = true;
  // Each GPU's rates at start-up, for the floors (rates.hpp); --no-rates turns them off.
  bool rates = true;
  // One more, untimed call of each GPU result under CUPTI's trace, for its GPU busy time (gpu_busy.hpp);
  // --no-gpu-busy turns it off (under a profiler, which holds CUPTI itself).
  bool gpu_busy = true;
};

struct RunOptions {
  std::string config = "configs/default.json";
  std::vector<std::string> case_specs;     // "11", "8-11", "0,3"
  std::vector<std::string> groups;         // "ta", "large", "smoke"
  std::vector<std::string> version_specs;  // "v8", "v1,v3"
  std::vector<std::string> param_specs;    // --param "v16.leaf=128", "v16.test=box,median" (a sweep)
  bool ignore_matrix_params = false;       // the matrix's "params" are not read (an --isolate child's)
  std::string devices = "all";             // "all" or "0,1"
  std::string host_memory = "pinned";      // pinned | pageable
  std::optional<std::uint64_t> seed;       // overrides every case's seed
  MeasureOptions measure;
  bool quiet = false;
  bool list = false;
  bool list_params = false;  // --list --params
  bool isolate = false;         // run each (case, version) in a child process
  bool interleave = false;      // a version's two settings in one sampling loop, alternating (interleave.hpp)
  bool isolated_child = false;  // this process is such a child: no screen output
  std::string json_path, md_path, csv_path;
  std::vector<std::string> argv;
  // A case given by flags instead of a matrix (--k, --m, --n, --topk, --self-join, --distribution):
  // matrix field -> the flag's text (matrix.hpp, adhoc_matrix). Empty: the --config matrix.
  std::map<std::string, std::string> adhoc_case;
  // An --isolate child's rates, measured once by its parent (which sets rates_given): the child
  // records them as its own instead of measuring each GPU again (0.3 s per GPU per child).
  bool rates_given = false;
  std::vector<DeviceRates> given_rates;
  std::string given_rates_note;
};

// Every field by name; from_json requires each one (a missing field throws), so a file from
// another build is an error, not a silent default.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceRates, sgemm_tflops, tf32_tflops, int8_tops, d2d_gbps, h2d_pinned_gbps, h2d_pageable_gbps,
                                   d2h_pinned_gbps, d2h_pageable_gbps, fp16_tflops, ms)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MeasureOptions, warmup, min_samples, min_time_s, max_time_s, max_samples, max_noise_pct, resample, validate,
                                   strict_peers, validate_queries, dump_answers, kill_after_max_time, canary, rates,
                                   gpu_busy)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RunOptions, config, case_specs, groups, version_specs, param_specs, ignore_matrix_params, devices, host_memory, seed,
                                   measure, quiet, list, list_params, isolate, interleave, isolated_child, json_path, md_path, csv_path, argv, adhoc_case,
                                   rates_given, given_rates, given_rates_note)

}  // namespace knn
