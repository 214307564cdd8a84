#pragma once
// The results schema (schema_version 2; 1 still reads): its one writer and its one reader. The JSON reporter,
// --isolate's child processes, `knnbench report` and `knnbench compare` all go through here.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "result.hpp"
#include "results_schema_canary.hpp"  // the canary's fields (canary.hpp)

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
// The same, naming the result as `where` ("line 3: result", a journal's line) in `file`.
Result result_from_json_at(const nlohmann::json& j, const std::string& file, const std::string& where);
// Reads a results file's header. Header fields are informative: a missing one reads as empty (or
// zero). What is there must be what the writer writes: check_header refuses an unknown field or
// one of another type ("meta.complete": "yes"), naming the file and the field.
RunInfo run_info_from_json(const nlohmann::json& j);
void check_header(const nlohmann::json& doc, const std::string& file);

struct ResultsDocument {
  std::string file;
  RunInfo info;
  std::vector<Result> results;
};
// Refuses (SchemaError naming file, results[i] and the field) results that contradict themselves
// (results_schema_check.cpp): stats.samples other than the length of samples_ms; a stat derived
// from the samples (median, min, max, mean, stdev, noise, the median's interval) that disagrees
// with them; a pass without a finite median ≥ 0 or without samples; a timed result whose
// validation failed or found wrong neighbours; a (case, version) twice.
void check_results_agree(const std::string& file, const std::vector<Result>& results);
// The same, with each result's name for messages: labels[i] is "f.json: results[i]" or, for a
// result merged from a journal, "f.json.journal: line 5: result".
void check_results_agree(const std::vector<std::string>& labels, const std::vector<Result>& results);
// Whether a stat written from samples is the one recomputed from them: equal within 1e-9 relative.
bool stat_agrees(double written, double recomputed);

// Checks schema_version, meta.tool and the header (check_header), then reads every result and
// checks that they agree (check_results_agree). The first journal_lines.size() results came from
// the journal `file`.journal (merge_journal), journal_lines[i] the line of results[i]: their
// errors name the journal and that line.
ResultsDocument read_results_document(const nlohmann::json& doc, const std::string& file, const std::vector<std::size_t>& journal_lines = {});

// The most bytes an input file (results file, journal) may hold, and a gzipped one inflate to:
// 1 GiB, some 170 times the largest results file in results/ (h100/default.json.gz inflates to 6 MB).
inline constexpr std::size_t kMaxInputBytes = std::size_t(1) << 30;
// Reads an input file whole without ever blocking or growing without bound: opened with
// O_NONBLOCK (a FIFO with no writer does not hang), refused unless a regular file ("is a FIFO
// (named pipe), expected <expected>"; a directory, a character device such as /dev/zero, a
// socket), refused over max_bytes before reading; gzip data (by its magic bytes) is inflated, at
// most max_bytes, and must end where the file ends (trailing data is refused with its byte
// offset). A NUL byte, never part of JSON text, is refused at once. SchemaError naming the path.
std::string read_input_file(const std::string& path, const std::string& expected, std::size_t max_bytes = kMaxInputBytes);

// Reads, parses and checks a results file; every problem (no such file, not a regular file, over
// kMaxInputBytes, not JSON, a number beyond a double, wrong schema, a bad field) throws SchemaError
// naming the file. A journal of the same run beside it (results_journal.hpp: the run was killed)
// is merged first; its bad lines are named by the journal's path and line number.
ResultsDocument read_results_file(const std::string& path);

}  // namespace knn
