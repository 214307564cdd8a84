#pragma once
// The runner: the steps of a run. It checks the outputs, loads the matrix, makes the plan of
// (case, version) items (plan.hpp), describes the run and opens the reporters, then walks the plan
// case by case: prepare_case (prepare.hpp) once per way of running, an executor (executor.hpp) per
// way, each result to the reporters (run_report.hpp). The flags were checked by the CLI.
#include <string>

#include "matrix.hpp"
#include "options.hpp"

namespace knn {

// Runs the benchmark and returns the exit code (0 ok, 1 a validation failure, 128 + a signal when
// interrupted). Throws ConfigError for bad options or files (exit code 2).
int run_benchmark(const RunOptions& opts);
// The matrix a run takes: the ad-hoc case when flags give one, else the --config file.
Matrix run_matrix(const RunOptions& opts);

// The default results path for `stem` (results/local/<host>-<utc>): <stem>.json, else -2, -3, ...,
// claimed by creating the file, so runs started in the same second never overwrite each other.
std::string claim_default_results_path(const std::string& stem);

}  // namespace knn
