#pragma once
// The results schema (schema_version 2; 1 still reads): its one writer and its one reader. The JSON reporter,
// --isolate's child processes, `knnbench report` and `knnbench compare` all go through here.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "result.hpp"

namespace knn {

// 2: each result records its version's parameters (params, params_set, params_chosen); a file of
// schema 1 reads as results without parameters.
inline constexpr int kResultsSchemaVersion = 2;

// A results file that cannot be read: the message names the file, the result's index and the
// field ("base.json: results[3].case.seed: missing").
class SchemaError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

nlohmann::ordered_json results_to_json(const RunInfo& info, const std::vector<Result>& results);
nlohmann::ordered_json result_to_json(const Result& r);
// The "mpi" object of a run under mpirun (ranks, each rank's host and GPU) into info; absent: 0 ranks.
void read_mpi_json(const nlohmann::json& run, RunInfo& info);

// Reads one element of "results" as result_to_json writes it. What identifies a result (the
// case's parameters and checksums, version, status) and, for a pass, its stats are required;
// descriptive fields may be missing (older files) but not of another type. Throws SchemaError
// naming `file` and results[index]; the one-argument form names "result".
Result result_from_json(const nlohmann::json& j);
Result result_from_json(const nlohmann::json& j, const std::string& file, std::size_t index);
// Reads a results file's header. Header fields are informative: a missing or odd one reads as
// empty (or zero) and never stops a reader.
RunInfo run_info_from_json(const nlohmann::json& j);

struct ResultsDocument {
  std::string file;
  RunInfo info;
  std::vector<Result> results;
};
// Refuses (SchemaError naming file, results[i] and the field) results that contradict themselves:
// a pass without a finite median ≥ 0 or without samples, stats that disagree with samples_ms, a
// (case, version) twice.
void check_results_agree(const std::string& file, const std::vector<Result>& results);

// Checks schema_version and meta.tool, then reads the header and every result, and checks that
// they agree (check_results_agree).
ResultsDocument read_results_document(const nlohmann::json& doc, const std::string& file);
// Reads, parses and checks a results file; every problem (no such file, not JSON, a number beyond
// a double, wrong schema, a bad field) throws SchemaError naming the file. A journal of the same
// run beside it (results_journal.hpp: the run was killed) is merged first.
ResultsDocument read_results_file(const std::string& path);

}  // namespace knn
