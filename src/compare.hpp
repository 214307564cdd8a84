#pragma once
// `knnbench compare A.json B.json`: pairs the results of two runs and judges B against A.
// Reads results files only, through the one reader (results_schema.hpp); measures nothing.
// Pairing and verdicts are in compare.cpp, printing in compare_format.cpp.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "results_schema.hpp"
#include "stats.hpp"  // mann_whitney_p

namespace knn {

// compare's exit codes follow the program's (core/errors.hpp): 0 no SLOWER verdict, 1 at least
// one SLOWER verdict (the report counts them), 2 a usage error (missing or invalid file, bad flag)
// or nothing compared (no pair of passing results: a CI gate must not pass on an empty
// comparison), 3 an internal error.
inline constexpr int kCompareExitSlower = kExitValidationFailed;
inline constexpr int kCompareExitNothingCompared = kExitUsage;
inline constexpr int kCompareExitUsage = kExitUsage;
// Fewer raw samples on either side: no U test, and the verdict is "too few samples".
inline constexpr int kCompareMinSamples = 3;

struct CompareOptions {
  std::string file_a, file_b;
  double min_effect_pct = 5;          // --threshold: a smaller change of the median is SAME
  double min_change_ms = 0.05;        // --min-change: a smaller absolute change of the median is SAME
  double alpha = 0.01;                // --alpha: the U test's significance level
  double hide_below_pct = 0;          // --hide-below: do not print pairs with |B/A − 1|·100 below this
  std::vector<std::string> versions;  // "v3", "v1,v3"
  std::vector<std::string> cases;     // "11", "8-11", "0,3"
  std::string markdown_path;           // --md FILE: the report as markdown ("-": standard output)
  // Results whose versions' parameters differ are not paired; --ignore-params pairs them anyway
  // (the report names the parameters that differ).
  bool ignore_params = false;
  // --params A B: one results file (file_a), its results with parameter setting A against those with
  // B ("v15.tc=off" "v15.tc=on"): an ablation's verdict.
  std::vector<std::string> params_ab;
};

// The two sides of `compare --params A B` drawn from one document: the results whose version has
// setting A (resp. B), the compared parameter then removed so that the rest pairs them. CompareError
// for a malformed setting, or a side with no result.
std::pair<ResultsDocument, ResultsDocument> split_by_params(const ResultsDocument& doc, const std::string& a, const std::string& b);

// A usage problem: a missing or invalid file, a bad filter. The message names the file.
class CompareError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Adds the "compare" subcommand to `app`, binding its flags to `opts`; returns the subcommand.
CLI::App* add_compare_subcommand(CLI::App& app, CompareOptions& opts);
// Runs the comparison, prints to stdout (errors to stderr), returns the exit code.
int run_compare(const CompareOptions& opts);

// ---------------------------------------------------------------- the report, for tests and printers

// too_few: the U test cannot reach alpha with these sample counts (prints "too few samples");
// unknown: no time or no raw samples to judge (prints "????"). host_drift: SLOWER or FASTER by the
// rule, but the pair depends on the host and the files' host canaries differ (either way) by more
// than --threshold (compare_canary.cpp): not counted as a regression.
enum class Verdict { same, faster, slower, too_few, unknown, host_drift };
const char* to_string(Verdict v);

// A results file's header, as the reader gives it, and the file's name.
struct RunSummary {
  std::string file;
  RunInfo info;
};

struct ComparedPair {
  int case_id = 0;
  std::string version;
  std::string params;  // "k=3 m=1024 n=65536 topk=1 uniform seed=20240607"
  // Medians and their robust noise (Stats::median_noise_pct, NaN when unknown).
  double a_median_ms = 0, a_noise_pct = 0, b_median_ms = 0, b_noise_pct = 0;
  int a_samples = 0, b_samples = 0;
  double ratio = 0;               // B median / A median; NaN when A's median is not positive
  std::optional<double> p_value;  // both sides kept ≥ kCompareMinSamples raw samples
  Verdict verdict = Verdict::unknown;
  bool hidden = false;  // under --hide-below: not shown, not counted in the exit code
  // The median moved by more than --threshold percent but by no more than --min-change ms: SAME
  // for that reason, which the report says (min_change_notes).
  bool under_min_change = false;
  // What each side's answer was validated against (ValidationReport::ground_truth; "" when not validated).
  std::string a_ground_truth, b_ground_truth;
  // The host canaries' ratio B/A (as a time: > 1 the host of B was slower) when the verdict is host_drift
  // and that ratio is beyond the threshold; 0 when only a run's own spread made it host_drift.
  double host_ratio = 0;
  double effect_pct() const { return 100 * (ratio - 1); }
};

enum class NotCompared { refused, status, only_in_a, only_in_b };

struct UncomparedEntry {
  NotCompared kind = NotCompared::refused;
  int case_id = 0;
  std::string version;
  std::string detail;  // why, in words
};

struct VersionGeomean {
  std::string version;
  int pairs = 0;  // pairs with a positive ratio, hidden ones included
  double geomean = 0;
  int faster = 0, same = 0, slower = 0, too_few = 0, unknown = 0, host_drift = 0;
};

struct CompareReport {
  RunSummary a, b;
  std::vector<std::string> notes;  // header remarks: devices differ, incomplete runs, ...
  CompareOptions options;          // the rule's parameters, as applied
  std::vector<ComparedPair> pairs;  // ordered by version number, then case id
  std::vector<UncomparedEntry> uncompared;
  std::vector<VersionGeomean> geomeans;
  int slower = 0;         // SLOWER verdicts that count (not hidden)
  int hidden_slower = 0;  // SLOWER verdicts hidden by --hide-below
  int hidden = 0;
  std::string nothing_compared;  // why no pair was judged; empty when some were
  int exit_code() const {
    if (pairs.empty()) return kCompareExitNothingCompared;
    return slower > 0 ? kCompareExitSlower : kExitOk;
  }
};

// The verdict on one pair of passing results (exposed for tests): SLOWER or FASTER only when
//  1. the median moved by more than opts.min_effect_pct AND by more than opts.min_change_ms
//     (the same binary run twice in separate processes moved sub-millisecond GPU calls by up to
//     ~0.04 ms with ~1 % noise inside each process: docs/measurement.md),
//  2. beyond the noise of both sides: the two medians' ~95 % confidence intervals (median ±
//     median_noise_pct) do not overlap. nvbench compares the change against the smaller of two
//     sample spreads; our noise is the uncertainty of each median itself, so both add up, and
//  3. the Mann–Whitney U test on the raw samples rejects equality at opts.alpha.
// With fewer samples than the test needs to reach alpha (mann_whitney_min_p > alpha, e.g. 4
// against 4 at 0.01) the verdict is too_few: no guess.
Verdict judge_results(const Result& a, const Result& b, const CompareOptions& opts, std::optional<double>* p_value = nullptr);

// Compares two parsed results documents. Throws CompareError (naming opts.file_a or
// opts.file_b, or "A"/"B" when empty) for a wrong schema_version, missing fields or bad filters.
CompareReport compare_documents(const nlohmann::json& a, const nlohmann::json& b, const CompareOptions& opts);
// The same for two results files already read (read_results_file); throws CompareError for bad filters.
CompareReport compare_runs(const ResultsDocument& a, const ResultsDocument& b, const CompareOptions& opts);
// The report as text for the terminal, or as markdown.
std::string format_compare(const CompareReport& report, bool markdown);

// The report's notes (compare_notes.cpp). What differs between the two runs: devices, hosts, host
// memory, an incomplete run.
std::vector<std::string> header_notes(const RunSummary& a, const RunSummary& b);
// Judged pairs whose sides were both validated, but against different ground truths (one file's
// published neighbours, the other v0 alone, or other samples of queries): one note per such pair
// of ground truths, naming the cases and versions. Pairs are still judged: the times are not wrong.
std::vector<std::string> ground_truth_notes(const std::vector<ComparedPair>& pairs);
// Each shown SAME pair whose median moved by more than --threshold percent but not by more than
// --min-change ms: "v3 case 0: B changed by -99.9% but only 0.0160 ms, under --min-change 0.05 ms:
// SAME". Without it a B 1000 times faster on a 0.016 ms case would be SAME with no reason given.
std::vector<std::string> min_change_notes(const std::vector<ComparedPair>& pairs, const CompareOptions& opts);
// At least kDriftMinVersions versions, each with kDriftMinPairs or more pairs, whose geometric
// mean of B/A moved beyond min_effect_pct in the same direction: one note per direction, naming
// them. The verdicts stand; the note says what such a pattern usually means (the integrity twins
// of docs/measurement.md: every host-side version +5 to +15 % in the second process).
inline constexpr int kDriftMinVersions = 3;
inline constexpr int kDriftMinPairs = 2;
std::vector<std::string> drift_notes(const std::vector<VersionGeomean>& geomeans, double min_effect_pct);

// ---------------------------------------------------------------- the host canaries (compare_canary.cpp)

// How the host's speed moved from A to B, from the canaries of each file's results (canary.hpp):
// the median over the results of every reading (before and after) of the CPU loop's time and of the
// memory bandwidth. Known only when both files hold canaries.
struct HostShift {
  bool known = false;
  double cpu_ratio = 0;  // B/A of the CPU loop's time
  double mem_ratio = 0;  // A/B of the bandwidth: > 1 when B's memory was slower
  // Within each file: the larger of the canary's max/min for the CPU loop and for the bandwidth.
  double spread_a = 0, spread_b = 0;
  // The one of the two ratios farther from 1, as a time ratio.
  double ratio() const;
  // Either file's host changed speed during its own run (a spread over kCanarySpreadWarning, the
  // threshold at which `report` warns): its host-side times do not compare with anything.
  bool unsteady() const;
  // The medians' ratio beyond --threshold.
  bool moved(double min_effect_pct) const;
  // moved, or unsteady.
  bool drifted(double min_effect_pct) const;
};
HostShift host_shift(const std::vector<Result>& a, const std::vector<Result>& b);
// Whether a result's time depends on the host: it used no GPU, or its family is cpu, or its host
// phase `build` (a tree built on the host) takes at least half of its median, or its GPUs were busy
// for under 90 % of its median (host_bound: gpu_busy.hpp).
bool depends_on_host(const Result& r);
// p's SLOWER (FASTER) becomes HOST DRIFT when both results depend on the host and the host drifted
// slower (faster) beyond --threshold; returns p.
ComparedPair with_host_drift(ComparedPair p, const Result& a, const Result& b, const HostShift& shift, const CompareOptions& opts);
// What the canaries say: the shift when it is beyond --threshold, and how many verdicts it turned
// into HOST DRIFT; nothing when the files have no canaries.
std::vector<std::string> host_drift_notes(const HostShift& shift, const CompareReport& rep);

}  // namespace knn
