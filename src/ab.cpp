// `knnbench ab`: the subcommand, its processes in rounds A B B A A B ..., and reading back what they
// measured. The statistics are ab_stats.cpp, the report ab_format.cpp.
#include "ab.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "canary.hpp"  // cpu_list
#include "cli.hpp"
#include "core/params.hpp"
#include "interrupt.hpp"  // signal_name
#include "output_file.hpp"
#include "results_schema.hpp"
#include "selection.hpp"
#include "terminal.hpp"

namespace knn {
namespace {

namespace fs = std::filesystem;

// The flags that belong to ab itself; every other flag of the subcommand is a run flag, passed on.
const std::set<std::string> kOwnFlags = {"--a", "--b", "--a-param", "--b-param", "--processes", "--paired", "--no-interleave", "--threshold",
                                         "--min-change", "--alpha", "--json", "--md", "--help"};
// A run's flags that make no sense for one process of an experiment (ab writes its own results).
const char* const kDroppedRunFlags[] = {"--json", "--md", "--csv", "--list", "--params", "--quiet", "--dump-answers"};

// SIGINT or SIGTERM: the first ends the experiment after the process in flight (told to stop as a
// run is: it saves what it finished), and the report of the rounds done is written; a second quits at
// once. The process in flight gets the signal from ab when it was not sent to the whole group.
std::atomic<int> g_stop{0};
std::atomic<pid_t> g_child{0};

extern "C" void on_ab_signal(int sig) {
  int none = 0;
  if (!g_stop.compare_exchange_strong(none, sig)) std::_Exit(128 + sig);
  static const char msg[] = "\nknnbench ab: stopping after the process in flight; the rounds done are reported (again to quit now)\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  if (const pid_t c = g_child.load(); c > 0) ::kill(c, SIGTERM);
}

void install_ab_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_ab_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

struct Exit {
  int status = 0;
  std::string output;  // stdout and stderr, the last 64 KiB
};

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = strsignal(WTERMSIG(status));
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), name ? name : "?");
  }
  return fmt::format("exited with code {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

std::string last_lines(const std::string& text, int lines) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  std::size_t at = t.size();
  for (int i = 0; i < lines; ++i) {
    at = at == 0 ? std::string::npos : t.rfind('\n', at - 1);
    if (at == std::string::npos) return t;
  }
  return t.substr(at + 1);
}

// Runs `bin args...` with stdout and stderr into `log`, waits, returns its status and output. The
// process dies with this one.
Exit run_process(const std::string& bin, const std::vector<std::string>& args, const std::string& log) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("ab: fork() failed");
  if (pid == 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) std::_Exit(127);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) ::dup2(fd, STDOUT_FILENO), ::dup2(fd, STDERR_FILENO);
    std::vector<std::string> words{bin};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    std::_Exit(127);
  }
  Exit out;
  g_child = pid;
  if (g_stop.load() != 0) ::kill(pid, SIGTERM);  // the signal came between fork and here
  while (::waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  out.output = ss.str();
  if (out.output.size() > 65536) out.output.erase(0, out.output.size() - 65536);
  return out;
}

struct Side {
  char name;  // 'A' or 'B'
  std::string bin;
  std::vector<std::string> params;
  std::string describe() const {
    std::string s = bin;
    for (const auto& p : params) s += " --param " + p;
    return s;
  }
};

// A missing binary, or one that is not knnbench (its -V must print "knnbench "): ConfigError.
void check_binary(const Side& s, const std::string& dir) {
  const std::string flag = s.name == 'A' ? "--a" : "--b";
  if (!fs::exists(s.bin)) throw ConfigError(fmt::format("{} {}: no such file", flag, s.bin));
  if (::access(s.bin.c_str(), X_OK) != 0) throw ConfigError(fmt::format("{} {}: not executable", flag, s.bin));
  const Exit e = run_process(s.bin, {"-V"}, fmt::format("{}/{}-version.log", dir, s.name));
  if (!WIFEXITED(e.status) || WEXITSTATUS(e.status) != 0 || e.output.rfind("knnbench ", 0) != 0)
    throw ConfigError(fmt::format("{} {}: not a knnbench binary ('{} -V' {}, printing '{}'; expected 'knnbench <version>')", flag, s.bin,
                                  s.bin, describe_exit(e.status), last_lines(e.output, 1)));
}

// What identifies one (case, version) across the two sides: the version with the parameters that
// both sides share (the ones --a-param and --b-param set are left out), and the case id.
std::string row_label(const Result& r, const std::set<std::string>& side_params) {
  std::map<std::string, std::string> values;
  std::vector<std::string> set;
  for (const auto& [name, value] : r.params)
    if (!side_params.count(r.version + "." + name)) values[name] = value;
  for (const auto& name : r.params_set)
    if (!side_params.count(r.version + "." + name)) set.push_back(name);
  return variant_label(r.version, values, set);
}

std::string case_text(const Case& c) {
  return fmt::format("k={} m={} n={} topk={}{} seed={}", c.dim, c.m, c.n, c.topk, c.self_join ? " self-join" : "", c.seed);
}

// The experiment's state: each (case, version)'s row, and the inputs each side saw.
struct Collector {
  std::set<std::string> side_params;
  std::map<std::string, std::pair<std::string, std::string>> paired_values;  // "t7.slowdown" -> (A's value, B's value)
  std::map<std::pair<std::string, int>, AbRow> rows;
  std::map<std::pair<std::string, int>, std::string> inputs;  // checksums of the first result seen
  std::string matrix_a, matrix_b;
  std::map<std::string, int> not_timed;  // "t7 case 3: side B fail (reason)" -> processes

  // Under --paired, which side a result is: its value of its version's side parameter.
  char side_of(const Result& r) const {
    for (const auto& [key, values] : paired_values) {
      if (key.rfind(r.version + ".", 0) != 0) continue;
      const auto it = r.params.find(key.substr(r.version.size() + 1));
      if (it == r.params.end()) continue;
      if (it->second == values.first) return 'A';
      if (it->second == values.second) return 'B';
      throw ConfigError(fmt::format("--paired: {} case {} ran with {}={}, neither side's value ({} or {})", r.version, r.problem_case.id,
                                    key, it->second, values.first, values.second));
    }
    return 0;  // a version without a side parameter: both sides alike, not compared
  }

  void add(const ResultsDocument& doc, char side, int round) {
    std::string& matrix = side == 'A' ? matrix_a : matrix_b;
    if (matrix.empty()) matrix = doc.info.matrix_checksum;
    if (matrix_a != matrix_b && !matrix_a.empty() && !matrix_b.empty())
      throw ConfigError(fmt::format("the two sides ran different matrices (checksum {} in A, {} in B): give both the same --config",
                                    matrix_a, matrix_b));
    for (const Result& r : doc.results) {
      if (!paired_values.empty() && (side = side_of(r)) == 0) continue;
      const auto key = std::pair{row_label(r, side_params), r.problem_case.id};
      const std::string in = fmt::format("{} queries {} references {}", case_text(r.problem_case), r.query_checksum, r.reference_checksum);
      auto [it, fresh] = inputs.emplace(key, in);
      if (!fresh && it->second != in)
        throw ConfigError(fmt::format("{} case {}: the sides' inputs differ ({}: {}; before: {}): refused, both sides must run the same matrix",
                                      key.first, key.second, side, in, it->second));
      if (!timed(r.status)) {
        ++not_timed[fmt::format("{} case {}: side {} {}{}", key.first, key.second, side, to_string(r.status),
                                r.reason.empty() ? "" : " (" + r.reason + ")")];
        continue;
      }
      AbRow& row = rows[key];
      row.case_id = key.second, row.label = key.first, row.params = case_text(r.problem_case);
      AbSide& s = side == 'A' ? row.a : row.b;
      s.medians_ms.push_back(r.stats.median);
      s.rounds.push_back(round);
      s.interleaved_samples.push_back(r.interleaved ? r.samples_ms : std::vector<double>{});
      s.hosts.push_back({r.canary.cpu_ms(), r.canary.mem_gbps(), r.host_facts.input_numa_node, r.host_facts.input_anon_huge_kb,
                         r.host_facts.cpus.empty() ? "" : cpu_list(r.host_facts.cpus), r.host_facts.cpu_mhz,
                         r.host_facts.steal_pct, r.host_facts.involuntary_switches});
    }
  }
};

std::string seconds(double s) { return s < 90 ? fmt::format("{:.0f} s", s) : fmt::format("{:.1f} min", s / 60); }

}  // namespace

CLI::App* add_ab_subcommand(CLI::App& app, AbOptions& o) {
  CLI::App* sub = app.add_subcommand("ab",
                                     "Compare two sides in alternating processes (A B B A A B ...): two binaries (--a, --b) or two\n"
                                     "parameter settings of one (--a-param, --b-param). The process is the unit: each process's\n"
                                     "median is one observation. The flags of a run (--config, --case, --version, --k ...) go to every process.");
  add_run_options(*sub, o.bound);
  for (const char* name : kDroppedRunFlags) sub->remove_option(sub->get_option(name));
  sub->add_option("--a", o.bin_a, "Side A's knnbench binary (default: this one)");
  sub->add_option("--b", o.bin_b, "Side B's knnbench binary (default: this one)");
  sub->add_option("--a-param", o.params_a, "A parameter setting of side A only, as --param takes it (repeatable)");
  sub->add_option("--b-param", o.params_b, "A parameter setting of side B only (repeatable)");
  sub->add_option("--processes", o.processes, "Processes per side (rounds), at least 2")->capture_default_str();
  sub->add_flag("--paired", o.paired,
                "Parameter sides only: every process runs both settings, next to each other for each (case, version),\n"
                "and the verdict is on each process's B/A (signed-rank test): a host that is slow for a whole process\n"
                "slows both alike. 2 x --processes processes, the settings' order alternating. Each process interleaves\n"
                "the two settings' calls (--interleave: A B B A ... in one sampling loop) and its B/A is the median of\n"
                "its neighbouring samples' ratios, so a host that changes speed within the process slows both alike too");
  sub->add_flag("--no-interleave", o.no_interleave,
                "With --paired: each process times one setting's calls as one block, then the other's, and its B/A is\n"
                "the ratio of its two medians");
  sub->add_option("--threshold", o.rule.min_effect_pct, "Minimum effect: a change of the ratio under PCT percent is SAME")->capture_default_str();
  sub->add_option("--min-change", o.rule.min_change_ms, "Minimum absolute effect in ms (0 turns it off)")->capture_default_str();
  sub->add_option("--alpha", o.rule.alpha, "Significance level of the rank test; the ratio's interval is at 1 - alpha")->capture_default_str();
  sub->add_option("--json", o.json_path, "Write the report with every process's median to FILE")->type_name("FILE");
  sub->add_option("--md", o.markdown_path, "Also write the report as markdown to FILE")->type_name("FILE");
  sub->footer(
      "Verdicts: per (case, version), each side's per-process medians; SLOWER or FASTER only when B/A moved by more\n"
      "than --threshold and --min-change, the Mann-Whitney test across processes rejects at --alpha and the ratio's\n"
      "interval (Moses, at 1 - alpha) excludes 1. A side whose processes split into a fast and a slow mode is shown\n"
      "as bimodal, and then the sides are compared within modes (docs/measurement.md, \"compare or ab\").\n"
      "Exit codes: 0 no SLOWER verdict, 1 a SLOWER verdict, 2 a usage error or nothing compared, 3 internal.\n\n"
      "Examples: knnbench ab --a build-old/knnbench --b build/knnbench --group smoke\n"
      "          knnbench ab --a-param v15.tc=off --b-param v15.tc=on --version v15 --case 8-11");
  return sub;
}

std::vector<std::string> ab_forwarded_args(const CLI::App& sub) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : sub.get_options()) {
    const std::string name = opt->get_name();
    if (kOwnFlags.count(name) || opt->count() == 0) continue;
    if (opt->get_expected_max() == 0) {
      for (std::size_t i = 0; i < opt->count(); ++i) out.push_back(name);
      continue;
    }
    for (const std::string& value : opt->results()) out.insert(out.end(), {name, value});
  }
  return out;
}

int run_ab(const AbOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path dir = fs::temp_directory_path() / fmt::format("knnbench-ab-{}", ::getpid());
  try {
    if (opts.processes < 2) throw ConfigError(fmt::format("--processes {}: expected at least 2 per side", opts.processes));
    const CompareOptions& rule = opts.rule;
    if (!(rule.min_effect_pct >= 0)) throw ConfigError(fmt::format("--threshold {}: expected a percentage >= 0", rule.min_effect_pct));
    if (!(rule.min_change_ms >= 0)) throw ConfigError(fmt::format("--min-change {}: expected milliseconds >= 0", rule.min_change_ms));
    if (!(rule.alpha > 0 && rule.alpha < 1)) throw ConfigError(fmt::format("--alpha {}: expected a probability between 0 and 1", rule.alpha));
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    const Side sides[2] = {{'A', opts.bin_a.empty() ? self : opts.bin_a, opts.params_a}, {'B', opts.bin_b.empty() ? self : opts.bin_b, opts.params_b}};
    Collector col;
    for (const Side& s : sides)
      for (const std::string& p : s.params) {
        const ParamRequest req = parse_param_request(p, s.name == 'A' ? "--a-param" : "--b-param");
        col.side_params.insert(req.version + "." + req.name);
      }
    fs::create_directories(dir);
    for (const Side& s : sides) check_binary(s, dir.string());
    // One short run per process unless the flags say otherwise: no noise target (the processes are
    // the samples) and a quarter of a second of calls.
    std::vector<std::string> common = opts.run_args;
    const auto given = [&](const char* flag) { return std::find(common.begin(), common.end(), flag) != common.end(); };
    if (!given("--max-noise")) common.insert(common.end(), {"--max-noise", "0"});
    if (!given("--min-time")) common.insert(common.end(), {"--min-time", "0.25"});
    if (!given("--no-rates")) common.push_back("--no-rates");  // floors are not compared: spare each process the GPUs' rates
    if (!opts.paired && (given("--interleave") || opts.no_interleave))
      throw ConfigError(fmt::format("{}: without --paired each process runs one side, with nothing to interleave; give --paired",
                                    opts.no_interleave ? "--no-interleave" : "--interleave"));
    if (opts.no_interleave && given("--interleave")) throw ConfigError("--interleave with --no-interleave: give one or the other");
    if (opts.paired && !opts.no_interleave && !given("--interleave")) common.push_back("--interleave");  // A B B A ... in one loop
    AbReport rep;
    rep.side_a = sides[0].describe();
    rep.side_b = sides[1].describe();
    rep.paired = opts.paired;
    if (opts.paired) col.paired_values = paired_settings(opts);
    rep.rule = rule;
    install_ab_handlers();
    const int total = 2 * opts.processes;
    int done = 0;
    const bool tty = ::isatty(STDERR_FILENO);
    const int rounds = opts.paired ? 2 * opts.processes : opts.processes, per_round = opts.paired ? 1 : 2;
    for (int round = 0; round < rounds && g_stop.load() == 0; ++round) {
      const int first = round % 2 == 0 ? 0 : 1;  // A B, B A, A B, ...: A B B A A B B A
      std::vector<std::pair<char, ResultsDocument>> got;
      std::string dropped;
      for (int k = 0; k < per_round && dropped.empty(); ++k) {
        const Side s = opts.paired ? Side{'P', sides[0].bin, paired_sweep(col.paired_values, first == 1)} : sides[(first + k) % 2];
        const std::string json = fmt::format("{}/{}-{}.json", dir.string(), s.name, round);
        std::vector<std::string> args = common;
        for (const auto& p : s.params) args.insert(args.end(), {"--param", p});
        args.insert(args.end(), {"--quiet", "--json", json});
        const Exit e = run_process(s.bin, args, fmt::format("{}/{}-{}.log", dir.string(), s.name, round));
        ++done;
        if (g_stop.load() != 0) {
          dropped = fmt::format("stopped by {} during side {}'s process", signal_name(g_stop.load()), s.name);
          break;
        }
        if (WIFEXITED(e.status) && WEXITSTATUS(e.status) == kExitUsage)
          throw ConfigError(fmt::format("side {} ({}) refused its run: {}", s.name, s.describe(), last_lines(e.output, 3)));
        const bool ran = WIFEXITED(e.status) && (WEXITSTATUS(e.status) == 0 || WEXITSTATUS(e.status) == kExitValidationFailed);
        if (!ran || !fs::exists(json)) {
          dropped = fmt::format("side {}'s process {}{}", s.name, describe_exit(e.status),
                                last_lines(e.output, 1).empty() ? "" : ": " + last_lines(e.output, 1));
          continue;
        }
        got.emplace_back(s.name, read_results_file(json));
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::string what = opts.paired ? std::string("both settings") : fmt::format("side {}", s.name);
        const std::string line = fmt::format("ab: round {}/{}, {} done ({} of {} processes), {} elapsed, ETA {}", round + 1, rounds, what,
                                             done, total, seconds(elapsed), seconds(elapsed / done * (total - done)));
        fmt::print(stderr, tty ? "\r\033[K{}" : "{}\n", line);
      }
      if (!dropped.empty()) {
        rep.notes.push_back(fmt::format("round {} dropped: {}", round + 1, dropped));
        fmt::print(stderr, "{}ab: round {} dropped: {}; the run goes on\n", tty ? "\r\033[K" : "", round + 1, dropped);
        ++rep.rounds_dropped;
        done += per_round - int(got.size()) - 1;
        continue;
      }
      for (auto& [name, doc] : got) col.add(doc, name, round + 1);
      ++rep.rounds_run;
    }
    if (tty) fmt::print(stderr, "\r\033[K");
    if (g_stop.load() != 0)
      rep.notes.push_back(fmt::format("stopped by {} after {} of {} rounds: the verdicts are on the rounds done", signal_name(g_stop.load()),
                                      rep.rounds_run + rep.rounds_dropped, rounds));
    for (auto& [key, row] : col.rows) {
      if (row.a.medians_ms.empty() || row.b.medians_ms.empty()) {
        rep.notes.push_back(fmt::format("{} case {}: timed only on side {}", row.label, row.case_id, row.a.medians_ms.empty() ? 'B' : 'A'));
        continue;
      }
      row.j = opts.paired ? judge_paired_rounds(row, rule) : judge_ab(row.a, row.b, rule);
      rep.rows.push_back(row);
    }
    for (const auto& [what, count] : col.not_timed) rep.notes.push_back(fmt::format("{}, in {} process{}", what, count, count == 1 ? "" : "es"));
    std::sort(rep.rows.begin(), rep.rows.end(), [](const AbRow& x, const AbRow& y) {
      return x.label != y.label ? version_less(x.label, y.label) : x.case_id < y.case_id;
    });
    const std::string text = wrap_lines(format_ab(rep, false), kScreenWidth);
    const bool colour = colour_wanted(STDOUT_FILENO);
    fmt::print("{}", paint_word(paint_word(text, "SLOWER", Colour::red, colour), "FASTER", Colour::green, colour));
    std::fflush(stdout);
    if (!opts.markdown_path.empty()) write_output_file(opts.markdown_path, format_ab(rep, true));
    if (!opts.json_path.empty()) write_output_file(opts.json_path, ab_to_json(rep).dump(1) + "\n");
    std::error_code ec;
    fs::remove_all(dir, ec);
    return g_stop.load() != 0 ? 128 + g_stop.load() : rep.exit_code();
  } catch (const ConfigError& e) {
    fmt::print(stderr, "knnbench ab: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "knnbench ab: internal error: {}\n", e.what());
    return kExitInternal;
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return kExitUsage;
}

}  // namespace knn
