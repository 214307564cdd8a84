#include "cli.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <utility>
#include <nlohmann/json.hpp>

#include "ab.hpp"
#include "build_info.hpp"
#include "compare.hpp"
#include "core/errors.hpp"
#include "core/registry.hpp"
#include "host_memory.hpp"
#include "isolate.hpp"
#include "matrix.hpp"
#include "results_journal.hpp"
#include "param_list.hpp"
#include "report.hpp"
#include "output_file.hpp"
#include "results_schema.hpp"
#include "runner.hpp"
#include "selection.hpp"

#ifndef KNN_SOURCE_DIR
#define KNN_SOURCE_DIR "."
#endif

namespace knn {
namespace {

const char* gpu_need(GpuNeed g) {
  switch (g) {
    case GpuNeed::none: return "no GPU";
    case GpuNeed::one: return "1 GPU";
    case GpuNeed::all_selected: return "all selected GPUs";
  }
  return "?";
}

// What a run with the same --version, --case and --group would run (an unknown id is an error, exit 2).
int list(const RunOptions& opts) {
  refuse_retired_environment();  // what a run would refuse, --list refuses too
  const auto versions = select_versions(opts.version_specs);
  const Matrix mx = run_matrix(opts);
  const std::vector<Case> cases = select_cases(mx, opts.case_specs, opts.groups);
  // The plan a run would make: every --param and the matrix's "params" checked as a run checks them.
  const Plan plan = make_plan(cases, versions, PlanChoices{opts.seed, 0, false, false, opts.param_specs, mx.file});
  fmt::print("Versions:\n");
  std::size_t id_width = 4;  // "v17"; the peers' ids are longer
  for (const VersionDesc* v : versions) id_width = std::max(id_width, v->id.size());
  for (const VersionDesc* v : versions)
    fmt::print("  {:<{}} {:<9} {:<17} {}\n", v->id, id_width, to_string(v->family), gpu_need(v->gpus), v->title);
  if (opts.list_params) fmt::print("\nParameters:\n{}", describe_params(versions));
  fmt::print("{}", describe_variants(plan, cases));
  fmt::print("\nCases in {} (k = dimension, m = queries, n = references, topk = neighbours):\n", mx.file);
  fmt::print("  {:>4} {:>4} {:>8} {:>9} {:>5}  {:<14} {:>10}  groups\n", "id", "k", "m", "n", "topk", "data", "seed");
  for (const auto& c : cases) {
    std::string groups;
    for (const auto& g : c.groups) groups += (groups.empty() ? "" : ",") + g;
    std::string files;
    if (!c.queries_file.empty()) files += "  queries: " + c.queries_file;
    if (!c.references_file.empty()) files += "  references: " + c.references_file;
    // "integers<100" names the bound; a self-join says so where m would be.
    const std::string data = c.distribution == Distribution::integers ? fmt::format("integers<{}", c.integer_max) : to_string(c.distribution);
    const std::string m = c.self_join ? "self" : std::to_string(c.m);
    fmt::print("  {:>4} {:>4} {:>8} {:>9} {:>5}  {:<14} {:>10}  {}{}\n", c.id, c.dim, m, c.n, c.topk, data, c.seed, groups, files);
  }
  return kExitOk;
}

// Output names before anything is read: no control character (a newline in a name is a mistake
// that would also break every message naming it) and at most one output to standard output.
void check_output_names(const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::vector<std::string> to_stdout;
  for (const auto& [flag, path] : outputs) {
    refuse_control_characters(flag, path);
    if (!path.empty() && names_standard_output(path)) to_stdout.push_back(flag + " " + path);
  }
  if (to_stdout.size() > 1)
    throw ConfigError(fmt::format("{} and {}: both to standard output, where they would mix; send at most one there", to_stdout[0], to_stdout[1]));
}

int rewrite_report(const std::string& in_path, const std::string& md, const std::string& csv) {
  if (md.empty() && csv.empty()) throw ConfigError("report: give --md FILE and/or --csv FILE");
  check_output_names({{"--md", md}, {"--csv", csv}});
  // Nor onto the journal beside the input: after a killed run it may hold the only copy of its results.
  refuse_same_files({{"report", in_path}, {"its journal", journal_path(in_path)}, {"--md", md}, {"--csv", csv}});
  check_output("--md", md);
  check_output("--csv", csv);
  // The one reader of results files: every error names the file, the result and the field.
  ResultsDocument doc;
  try {
    doc = read_results_file(in_path);
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConfigError(e.what());
  }
  const RunInfo& info = doc.info;
  const std::vector<Result>& results = doc.results;
  if (!md.empty()) make_markdown_reporter(md)->end(info, results);
  if (!csv.empty()) make_csv_reporter(csv)->end(info, results);
  return kExitOk;
}

// The flags of a run, each alone and together, before anything is read: ConfigError (exit 2) naming
// the flag and its value.
void check_run_options(const RunOptions& o) {
  const MeasureOptions& m = o.measure;
  if (m.min_samples < 1) throw ConfigError(fmt::format("--min-samples {}: expected at least 1", m.min_samples));
  if (m.warmup < 0) throw ConfigError(fmt::format("--warmup {}: expected 0 or more", m.warmup));
  if (!(m.max_time_s > 0)) throw ConfigError(fmt::format("--max-time {}: expected seconds > 0", m.max_time_s));
  if (m.max_samples < m.min_samples)
    throw ConfigError(fmt::format("--max-samples {}: expected at least --min-samples {}", m.max_samples, m.min_samples));
  if (!(m.max_noise_pct >= 0)) throw ConfigError(fmt::format("--max-noise {}: expected a percentage ≥ 0", m.max_noise_pct));
  if (!(m.min_time_s >= 0) || !std::isfinite(m.min_time_s))
    throw ConfigError(fmt::format("--min-time {}: expected a finite number of seconds ≥ 0", m.min_time_s));
  if (!std::isfinite(m.max_time_s)) throw ConfigError(fmt::format("--max-time {}: expected a finite number of seconds > 0", m.max_time_s));
  if (!std::isfinite(m.max_noise_pct))
    throw ConfigError(fmt::format("--max-noise {}: expected a finite percentage ≥ 0", m.max_noise_pct));
  if (m.validate_queries < 0)
    throw ConfigError(fmt::format("--validate-queries {}: expected 0 (every query) or a positive count", m.validate_queries));
  // An empty item ("--case ''", "--version ''") selects nothing: it is a mistake, not "everything".
  for (const auto& [flag, items] : {std::pair{"--case", &o.case_specs}, std::pair{"--version", &o.version_specs},
                                     std::pair{"--group", &o.groups}})
    for (const std::string& item : *items)
      if (item.find_first_not_of(", ") == std::string::npos)
        throw ConfigError(fmt::format("{} '{}': expected ids or names, not an empty value", flag, item));
  host_memory_named(o.host_memory);
  check_output_names({{"--json", o.json_path}, {"--md", o.md_path}, {"--csv", o.csv_path}, {"--dump-answers", m.dump_answers}});
}

// The default matrix is found from the working directory, else from the source tree.
std::string resolve_default_config(const std::string& path) {
  if (path != "configs/default.json" || std::filesystem::exists(path)) return path;
  const std::string alt = std::string(KNN_SOURCE_DIR) + "/configs/default.json";
  return std::filesystem::exists(alt) ? alt : path;
}

}  // namespace

void add_run_options(CLI::App& app, RunOptions& o) {
  app.add_option("--config", o.config, "Test matrix (JSON); see README for the schema")->capture_default_str();
  app.add_option("--version", o.version_specs, "Versions to run: v8, lists like v1,v3, ranges like v10-v12, a family like peer (repeatable; default all)");
  app.add_option("--param", o.param_specs,
                 "A version's parameter: --param v16.leaf=128; several values sweep them, each combination its own result "
                 "(--param v16.test=box,median --param v16.sort=on,off: four). Repeatable; `knnbench params` lists them");
  app.add_option("--case", o.case_specs, "Case ids: 11, ranges like 8-11, or lists (repeatable; default all)");
  app.add_option("--group", o.groups, "Case groups from the matrix, e.g. smoke, ta, large (repeatable; with --case: both)");
  app.add_flag("--list", o.list, "List the versions and cases a run would take (--version, --case, --group apply), then exit");
  app.add_flag("--params", o.list_params, "With --list: each listed version's parameters too");
  app.add_option("--devices", o.devices, "GPUs to use: all, ordinals like 0,1, or a range like 0-3")->capture_default_str();
  app.add_option("--host-memory", o.host_memory, "Host input memory: pinned (cudaMallocHost) or pageable (malloc, as the seeds)")
      ->capture_default_str();
  app.add_option("--warmup", o.measure.warmup, "Untimed calls before sampling each (case, version)")->capture_default_str();
  app.add_option("--min-samples", o.measure.min_samples, "Timed calls to take at least")->capture_default_str();
  app.add_option("--max-samples", o.measure.max_samples, "Timed calls to take at most")->capture_default_str();
  app.add_option("--min-time", o.measure.min_time_s, "Seconds of timed calls to take at least")->capture_default_str();
  app.add_option("--max-time", o.measure.max_time_s, "Budget per (case, version) in seconds; a slower call is measured once")
      ->capture_default_str();
  app.add_option("--max-noise", o.measure.max_noise_pct,
                 "After --min-samples and --min-time, sample until the noise of the median is at most this many percent "
                 "(or a limit is reached, which the result records); 0 = no noise target")
      ->capture_default_str();
  app.add_option("--resample", o.measure.resample,
                 "Sample a result that missed its noise target again, up to this many more times (each attempt with the "
                 "budgets above), and keep the least noisy attempt; the note gives the others (a machine busy for a while)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  // A seed is a whole number in [0, 2^64): CLI11 would clamp -1, 2^64 and 1e23 to the largest seed.
  app.add_option_function<std::string>(
      "--seed",
      [&o](const std::string& text) {
        const bool digits = !text.empty() && text.size() <= 20 && text.find_first_not_of("0123456789") == std::string::npos;
        errno = 0;
        char* end = nullptr;
        const unsigned long long v = digits ? std::strtoull(text.c_str(), &end, 10) : 0;
        if (!digits || errno == ERANGE || *end != '\0')
          throw ConfigError(fmt::format("--seed {}: expected a whole number from 0 to 18446744073709551615", text));
        o.seed = std::uint64_t(v);
      },
      "Override every case's data seed (0 to 2^64 - 1)")
      ->type_name("UINT");
  app.add_option("--json", o.json_path, "Results JSON (default results/local/<host>-<utc>.json)");
  app.add_option("--md", o.md_path, "Also write a markdown report");
  app.add_option("--csv", o.csv_path, "Also write a CSV table");
  app.add_flag_callback("--no-validate", [&o] { o.measure.validate = false; }, "Skip validation against v0");
  app.add_flag_callback("--no-canary", [&o] { o.measure.canary = false; },
                        "Do not read the host canary (a CPU loop and a memory probe, a few ms) before and after each result");
  app.add_flag_callback("--no-gpu-busy", [&o] { o.measure.gpu_busy = false; },
                        "Do not trace one more call of each GPU result for its GPU busy time (CUPTI; needed when a profiler such as Nsight holds CUPTI)");
  app.add_flag_callback("--no-rates", [&o] { o.measure.rates = false; },
                        "Do not measure each GPU's GEMM and copy rates at start-up (about 0.3 s per GPU): results then have no floor");
  app.add_flag("--strict-peers", o.measure.strict_peers,
               "Count a peer's wrong answer (status inexact: another library's exact kNN that failed validation) "
               "as a failure (exit 1); by default it is graded, shown with its wrong queries and recall, and "
               "leaves the exit code alone");
  app.add_option("--validate-queries", o.measure.validate_queries,
                 "Validate only this many queries, spread evenly over all m (for cases with ~1M queries, whose full "
                 "reference takes hours); 0 = all, or the case's validate_queries when it sets one")
      ->capture_default_str();
  // A folder: never empty (that would be "no dumps", silently) nor "-" (standard output is no folder).
  app.add_option_function<std::string>(
         "--dump-answers",
         [&o](const std::string& dir) {
           if (dir.empty()) throw ConfigError("--dump-answers '': expected a folder name, not an empty value");
           if (dir == "-") throw ConfigError("--dump-answers -: standard output is not a folder; name a folder for the .npy files");
           o.measure.dump_answers = dir;
         },
         "Folder for each result's answer as NumPy files case<ID>-<VERSION>-{indices,distances}.npy (m x topk)")
      ->type_name("DIR");
  // One case without a matrix file: each flag is a field of the matrix schema, checked by its loader.
  for (const auto& [flag, field, help] :
       {std::tuple{"--k", "k", "Ad-hoc case instead of --config: dimension (with --m, --n; e.g. --k 16 --m 1024 --n 1e6)"},
        std::tuple{"--m", "m", "Ad-hoc case: number of queries"}, std::tuple{"--n", "n", "Ad-hoc case: number of references"},
        std::tuple{"--topk", "topk", "Ad-hoc case: neighbours per query (default 1)"},
        std::tuple{"--distribution", "distribution", "Ad-hoc case: uniform (default), clusters, duplicates or integers"}}) {
    const std::string key = field;
    app.add_option_function<std::string>(flag, [&o, key](const std::string& text) { o.adhoc_case[key] = text; }, help)
        ->group("Ad-hoc case");
  }
  app.add_flag_callback("--self-join", [&o] { o.adhoc_case["self_join"] = "true"; }, "Ad-hoc case: the references are the queries (no --m)")
      ->group("Ad-hoc case");
  app.add_flag("--quiet", o.quiet, "Print only the final table");
  app.add_flag("--isolate", o.isolate,
               "Run each (case, version) in its own child process: a crash, a GPU fault or a call over --max-time is recorded "
               "as a failure and the run goes on");
  app.add_flag("--interleave", o.interleave,
               "With a sweep of one parameter over two values (--param V.NAME=X,Y): time each version's two settings in one "
               "sampling loop, their samples alternating X Y Y X X Y ... after a warm-up of both, so that a change of the "
               "host's speed within the run reaches both alike; each setting keeps its own result, marked interleaved. Not "
               "with --isolate, --resample or under mpirun (`knnbench ab --paired` uses it)");
}

int cli_main(int argc, char** argv) {
  CLI::App app{
      "knnbench: benchmark exact k-nearest-neighbour search on the CPU, one GPU and several GPUs.\n"
      "Runs every registered version (knnbench --list names them) on the cases of a JSON test matrix,\n"
      "validates each against v0 and prints a table of median wall times (ms). Sizes: k = dimension,\n"
      "m = queries, n = references; topk = neighbours per query.\n\n"
      "Examples:\n"
      "  knnbench --group smoke                 fast cases, every version\n"
      "  knnbench --version v8 --case 11        one version on one case\n"
      "  knnbench --version v1,v3 --case 8-11 --json out.json --md out.md\n"
      "  knnbench --version v10-v12 --group smoke   a range of versions on the smoke cases\n"
      "  knnbench --list --group ta             the versions and cases a run would take\n"
      "  knnbench -V                            the program's version (--build-info: compilers, git sha)\n"
      "  knnbench compare A.json B.json         compare two results files (see compare --help)\n"
      "  knnbench ab --a OLD/knnbench --b NEW/knnbench --case 8   two builds in alternating processes (ab --help)\n"
      "  knnbench report A.json --md A.md       rewrite a results file as markdown or CSV\n\n"
      "Exit codes: 0 all ran and validated, 1 a validation failure or a failing version,\n"
      "(a peer's wrong answer is graded inexact, not a failure, unless --strict-peers),\n"
      "2 a usage or configuration error, 3 an internal error, 130 interrupted (Ctrl-C),\n"
      "143 terminated (SIGTERM); results so far are saved.",
      "knnbench"};
  app.get_formatter()->column_width(34);

  RunOptions o;
  o.argv.assign(argv, argv + argc);
  add_run_options(app, o);
  bool build_info_flag = false, version_flag = false;
  std::string child_options_file;
  app.add_option("--isolated-child", child_options_file, "(internal) run as an --isolate child with the options in FILE")->group("");
  app.add_flag("--build-info", build_info_flag, "Print the build's version, git sha and compilers, then exit");
  // --version selects versions of the algorithm; the program's own version is -V or `knnbench version`.
  app.add_flag("-V", version_flag, "Print the program's version, then exit (--build-info says more)");
  CLI::App* version_cmd = app.add_subcommand("version", "Print the program's version, then exit");
  std::vector<std::string> params_of;
  CLI::App* params_cmd = app.add_subcommand("params", "List the versions' parameters (kind, allowed values, default, help), then exit");
  params_cmd->add_option("versions", params_of, "Versions, as --version takes them (default: every version that declares one)");

  CompareOptions compare_opts;
  CLI::App* compare = add_compare_subcommand(app, compare_opts);
  AbOptions ab_opts;
  CLI::App* ab = add_ab_subcommand(app, ab_opts);
  std::string report_in, report_md, report_csv;
  CLI::App* report = app.add_subcommand("report", "Rewrite a results JSON as markdown and/or CSV (tables, phases, trees against brute force)");
  report->add_option("results", report_in, "Results JSON written by knnbench")->required();
  report->add_option("--md", report_md, "Markdown file to write");
  report->add_option("--csv", report_csv, "CSV file to write");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string sub = compare->parsed() ? " compare" : ab->parsed() ? " ab" : "";
    const std::string what = e.what();
    // --version selects versions: someone asking for the program's version is pointed to -V.
    const std::string hint = what.rfind("--version:", 0) == 0 ? " (versions to run, e.g. --version v8; the program's version: -V)" : "";
    fmt::print(stderr, "knnbench{}: {}{}\nRun 'knnbench{} --help' for the options.\n", sub, what, hint, sub);
    return kExitUsage;
  }
  if (version_flag || version_cmd->parsed()) {
    fmt::print("knnbench {}\n", build_info::version);
    return kExitOk;
  }
  if (params_cmd->parsed()) {
    std::vector<const VersionDesc*> vs = select_versions(params_of);
    if (params_of.empty()) vs.erase(std::remove_if(vs.begin(), vs.end(), [](const VersionDesc* v) { return v->params.empty(); }), vs.end());
    fmt::print("{}", describe_params(vs));
    return kExitOk;
  }
  if (compare->parsed()) return run_compare(compare_opts);
  if (ab->parsed()) {
    ab_opts.run_args = ab_forwarded_args(*ab);
    return run_ab(ab_opts);
  }
  if (report->parsed()) return rewrite_report(report_in, report_md, report_csv);
  if (!child_options_file.empty()) {
    const RunOptions child = read_child_options(child_options_file);
    check_run_options(child);
    return run_benchmark(child);
  }
  if (!o.adhoc_case.empty() && app.get_option("--config")->count() > 0)
    throw ConfigError(fmt::format("--config {} with --k/--m/--n: a case given by flags replaces the matrix; give one or the other", o.config));
  o.config = resolve_default_config(o.config);

  if (build_info_flag) {
    fmt::print("knnbench {} (git {}), {} build, {}{}{}, CUDA architectures: {}\n", build_info::version, build_info::git_sha, build_info::build_type,
               build_info::cxx_compiler, *build_info::cuda_compiler ? ", nvcc " : ", no CUDA", build_info::cuda_compiler,
               *build_info::cuda_architectures ? build_info::cuda_architectures : "none");
    return kExitOk;
  }
  if (o.list) return list(o);
  check_run_options(o);
  refuse_retired_environment();
  return run_benchmark(o);
}

}  // namespace knn
