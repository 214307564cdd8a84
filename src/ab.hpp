#pragma once
// `knnbench ab`: two sides (two binaries, or two parameter settings of one) measured in alternating
// processes, A B B A A B ..., and judged with the process as the unit: each process's median of a
// (case, version) is one observation. On a host whose speed changes from one process to the next
// (fast or 1.5-2x slow for a whole process: docs/measurement.md, "compare or ab"), only this design
// gives a verdict that a drift cannot fake.
//   ab.cpp        the subcommand, the processes, reading their results
//   ab_stats.cpp  the statistics: modes, the ratio's interval, the verdict (no processes)
//   ab_format.cpp the table and the JSON
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compare.hpp"  // Verdict, CompareOptions' rule
#include "options.hpp"

namespace CLI {
class App;
}

namespace knn {

// ---------------------------------------------------------------- statistics (ab_stats.cpp)

// One mode of a side's per-process medians: the processes in it (indices into the side's values),
// their median and count.
struct AbMode {
  double median_ms = 0;
  std::vector<int> members;
};

// The mode rule (a gap test on log medians): sort the logs; of the splits that leave at least
// kAbModeMinCount processes on each side, take the one at the largest gap between neighbours. The
// side is bimodal when that gap exceeds kAbModeGapFactor times the pooled within-cluster standard
// deviation of the logs (n − 2 degrees of freedom) AND the minimum effect (log(1 + min_effect_pct /
// 100)): two levels closer than the threshold are not worth a name. One mode otherwise (or with
// fewer than 2 × kAbModeMinCount processes). Simulated on 4000 draws each: a unimodal log-normal
// side is called bimodal in 2 % of draws at 8 processes, 0.4 % at 12, none at 16; two levels 1.6x
// apart (35 % slow) are found in every draw.
inline constexpr int kAbModeMinCount = 2;
inline constexpr double kAbModeGapFactor = 4;
// Modes in order of their level (fast first): one or two.
std::vector<AbMode> find_modes(const std::vector<double>& medians_ms, double min_effect_pct);

// The distribution-free interval of a shift between two samples (Moses; the Hodges-Lehmann
// estimator's interval): of the na·nb differences b_j − a_i, sorted, the k-th from each end, k the
// largest with 2·P(U ≤ k − 1) ≤ 1 − level under the null distribution of the Mann-Whitney U (exact
// up to na·nb = 2500, normal beyond). It holds the true shift with probability ≥ level when B is A
// shifted. On log medians: the interval of the ratio B/A. `coverage` is what it guarantees (below
// `level` when the counts are too small for any interval to reach it: then [min, max]).
struct ShiftInterval {
  double low = 0, high = 0, estimate = 0;  // estimate: the median of the differences (Hodges-Lehmann)
  double coverage = 0;
};
ShiftInterval shift_interval(const std::vector<double>& a, const std::vector<double>& b, double level);

// What one process's result recorded of its host (the canary and the facts, canary.hpp); 0, -1 or
// empty where the process did not record it (--no-canary, an older binary).
struct AbHost {
  double canary_cpu_ms = 0, canary_mem_gbps = 0;
  std::string numa_node;  // of the inputs
  long long huge_kb = -1;  // the inputs' transparent huge pages
  std::string cpus;        // "0-3"
  double cpu_mhz = 0;
  double steal_pct = -1;   // the hypervisor's steal over the result; -1 unreadable
  long long switches = -1;  // the process's involuntary context switches over the result
};

// One side's processes of one (case, version): their medians in the order they ran, the round of
// each, and what each recorded of its host.
struct AbSide {
  std::vector<double> medians_ms;
  std::vector<int> rounds;
  std::vector<AbHost> hosts;  // one per median, or none
  // Under --paired, each process's samples when its result was interleaved (--interleave), else
  // empty; one per median, or none.
  std::vector<std::vector<double>> interleaved_samples;
};

// Whether a bimodal side's slow mode goes with what its processes recorded of the host: the canary
// (its CPU loop slower, its memory probe slower, by more than `min_effect_pct` between the modes'
// medians and with the modes' ranges apart), the hypervisor's steal time or the involuntary context
// switches (higher in every slow process than in any fast one), or a fact that takes one value in each
// mode (the inputs' NUMA node, whether they had huge pages, the CPUs). One line, "" when nothing was
// recorded.
std::string explain_modes(const AbSide& s, const std::vector<AbMode>& modes, double min_effect_pct);

struct AbJudgement {
  double a_median_ms = 0, b_median_ms = 0;  // medians of the per-process medians
  double ratio = 0;                         // the effect: B/A (within modes when `within_modes`)
  ShiftInterval ratio_interval;             // of B/A, at level 1 − alpha (exp of the log interval)
  std::optional<double> p_value;            // Mann-Whitney on the (aligned) log medians
  std::vector<AbMode> a_modes, b_modes;
  bool within_modes = false;  // a side is bimodal: judged within modes (aligned), below
  int a_used = 0, b_used = 0; // processes that entered the test (a mode with no twin on the other side is left out)
  Verdict verdict = Verdict::unknown;
  // The paired design: each process's B/A, the observations of the test, and whether every one of
  // them came from interleaved samples (paired_sample_ratio) rather than the ratio of the medians.
  std::vector<double> process_ratios;
  bool ratios_of_samples = false;
};

// The verdict on one (case, version). Modes are found on each side (find_modes). With one mode on
// both sides, the per-process log medians are compared directly. When a side is bimodal, the
// comparison is within modes: both bimodal, fast mode against fast mode and slow against slow; one
// bimodal, each process of the other side joins the bimodal side's mode nearest to it (in log).
// Each process's log median is then taken relative to the median of side A's processes in its mode
// (aligned ranks), a mode without processes of both sides is left out, and the residuals of A and B
// are compared as one sample each. SLOWER or FASTER only when the ratio moved by more than
// opts.min_effect_pct and (× A's median) by more than opts.min_change_ms, the Mann-Whitney test
// rejects at opts.alpha and the interval of the ratio at 1 − alpha excludes 1; too_few when the
// process counts cannot reach alpha; SAME otherwise.
AbJudgement judge_ab(const AbSide& a, const AbSide& b, const CompareOptions& opts);

// The verdict rule both designs share: too_few when the least p-value the process counts allow
// (`least_p`) exceeds alpha; SLOWER or FASTER when B/A moved by more than opts.min_effect_pct and
// opts.min_change_ms, p < alpha and the ratio's interval excludes 1; SAME otherwise.
Verdict ab_verdict(const AbJudgement& j, double least_p, const CompareOptions& opts);

// The paired design (ab_paired.cpp): a[i] and b[i] are the medians of one process, which ran both
// parameter settings next to each other. The observation is each process's log(B/A): Wilcoxon's
// signed-rank test (exact; zero differences left out, ties of |d| ranked in order) and the interval of
// the Walsh averages at 1 − alpha; the estimate is their median (Hodges-Lehmann). The same rules of
// effect, significance and interval as judge_ab; too_few when n processes all one way cannot reach alpha.
AbJudgement judge_paired(const AbSide& a, const AbSide& b, const CompareOptions& opts);
// The same test on given per-process ratios B/A (`ratios`, one per process of a and b).
AbJudgement judge_paired_ratios(const AbSide& a, const AbSide& b, const std::vector<double>& ratios, const CompareOptions& opts);
// One process's B/A from interleaved samples (a[i] and b[i] ran next to each other): the median of
// b[i] / a[i] over the pairs; NaN when the counts differ or there are none.
double paired_sample_ratio(const std::vector<double>& a, const std::vector<double>& b);
// Two-sided p of the signed-rank test on the differences d.
double signed_rank_p(const std::vector<double>& d);

// ---------------------------------------------------------------- the command (ab.cpp)

struct AbOptions {
  std::string bin_a, bin_b;                   // empty: this program
  std::vector<std::string> params_a, params_b;  // --a-param, --b-param: "v15.tc=off"
  int processes = 8;                          // per side
  bool paired = false;                        // --paired: both settings in each process (2 x processes of them)
  bool no_interleave = false;                 // --paired --no-interleave: each setting's calls as one block
  CompareOptions rule;                        // --threshold, --min-change, --alpha
  std::string json_path, markdown_path;
  std::vector<std::string> run_args;          // passed to every process (selection, measurement)
  RunOptions bound;                           // where the parser puts the run flags (only checked here)
};

// Adds the "ab" subcommand; its run flags (those of a run: --config, --case, --version, --k ...) are
// collected into opts.run_args by ab_forwarded_args after the parse.
CLI::App* add_ab_subcommand(CLI::App& app, AbOptions& opts);
// The run flags given to the subcommand, as command-line words for every process.
std::vector<std::string> ab_forwarded_args(const CLI::App& sub);
// Runs the experiment; prints the table to stdout, progress to stderr; returns the exit code:
// 0 no SLOWER, 1 a SLOWER verdict, 2 a usage error or nothing compared, 3 internal.
int run_ab(const AbOptions& opts);

// ---------------------------------------------------------------- --paired (ab_paired.cpp)

struct AbRow;
// Each side parameter's two values ("t7.slowdown" -> A's, B's), checked: one binary, the same
// parameters on both sides with one value each, at most one per version. ConfigError otherwise.
std::map<std::string, std::pair<std::string, std::string>> paired_settings(const AbOptions& o);
// One process's sweep of both settings: "t7.slowdown=0,10" (B's value first when `b_first`).
std::vector<std::string> paired_sweep(const std::map<std::string, std::pair<std::string, std::string>>& values, bool b_first);
// The paired verdict on the rounds where both settings of a row were timed.
AbJudgement judge_paired_rounds(const AbRow& row, const CompareOptions& rule);

// ---------------------------------------------------------------- the report (ab_format.cpp)

struct AbRow {
  int case_id = 0;
  std::string label;   // the version, with the parameters both sides share
  std::string params;  // the case's parameters
  AbSide a, b;
  AbJudgement j;
};

struct AbReport {
  std::string side_a, side_b;  // "build-old/knnbench", "knnbench --param v15.tc=off"
  std::vector<std::string> notes;  // dropped rounds, missing results
  int rounds_run = 0, rounds_dropped = 0;
  bool paired = false;  // each round one process with both settings
  std::vector<AbRow> rows;
  CompareOptions rule;
  int slower() const;
  int exit_code() const;
};

std::string format_ab(const AbReport& rep, bool markdown);
// The report with every process's median, as written by --json.
nlohmann::ordered_json ab_to_json(const AbReport& rep);

}  // namespace knn
