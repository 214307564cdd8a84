#pragma once
// The runner: selects the cases and versions, drives one (case, version) at a time (in this
// process through measure_version, or in a child through run_isolated), and hands each finished
// result to the reporters.
#include <functional>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "matrix.hpp"
#include "options.hpp"
#include "result.hpp"

namespace knn {

// Runs the benchmark and returns the exit code (0 ok, 1 a validation failure). Throws
// ConfigError for bad options or files (exit code 2).
int run_benchmark(const RunOptions& opts);
// The matrix a run takes: the ad-hoc case when flags give one, else the --config file.
Matrix run_matrix(const RunOptions& opts);

// The default results path for `stem` (results/local/<host>-<utc>): <stem>.json, else -2, -3, ...,
// claimed by creating the file, so runs started in the same second never overwrite each other.
std::string claim_default_results_path(const std::string& stem);

// Reports every one of `versions` as skipped for `reason`: `base` (the case's fields) with the
// version's id, title and family, through `announce` and `finish` as a run would.
void skip_versions(const std::vector<const VersionDesc*>& versions, const Result& base, const std::string& reason,
                   const std::function<void(const VersionDesc&)>& announce, const std::function<void(Result)>& finish);

}  // namespace knn
