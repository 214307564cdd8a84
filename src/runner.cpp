#include "runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>
#include <filesystem>
#include <algorithm>
#include <memory>
#include <tuple>

#include "answers_npy.hpp"
#include "canary.hpp"
#include "core/errors.hpp"
#include "datafile.hpp"
#include "devices.hpp"
#include "executor.hpp"
#include "host_memory.hpp"
#include "interleave.hpp"
#include "interrupt.hpp"
#include "isolate.hpp"
#include "mpi_env.hpp"
#include "output_file.hpp"
#include "param_list.hpp"
#include "plan.hpp"
#include "prepare.hpp"
#include "rates.hpp"
#include "report.hpp"
#include "results_journal.hpp"
#include "run_report.hpp"
#include "selection.hpp"
#include "sysinfo.hpp"

namespace knn {
namespace {

// What every step of a run reads.
struct Bench {
  const RunOptions& opts;
  const Matrix& mx;
  const Environment& env;
  const MeasureOptions& measure;
  RunReport& report;
};

// Before anything is read: not --isolate under mpirun.
void refuse_isolate_under_mpirun(const RunOptions& opts) {
  if (mpi_world().many() && (opts.isolate || opts.isolated_child))
    throw ConfigError(
        "--isolate cannot be used under mpirun: the ranks must make the same calls in one process each (a rank's "
        "child process would leave the others waiting); run without mpirun to isolate each version");
}

// Every file the run reads: the matrix and each case's data files, named as the matrix names them.
std::vector<NamedPath> run_inputs(const RunOptions& opts, const Matrix& mx) {
  std::vector<NamedPath> inputs;
  if (opts.adhoc_case.empty()) inputs.push_back({"the matrix (--config)", opts.config});
  for (const Case& c : mx.cases)
    for (const auto& [what, field, path] : {std::tuple{"queries", "queries_file", &c.queries_path},
                                            std::tuple{"references", "references_file", &c.references_path},
                                            std::tuple{"ground truth", "ground_truth_file", &c.ground_truth_path}})
      if (!path->empty()) inputs.push_back({fmt::format("the {} of case {} ({})", what, c.id, field), data_file_on_disk(*path)});
  return inputs;
}

// The answers the plan will dump (two m x topk arrays of 4-byte values and their headers per
// item), less the files of the same names they replace, must fit in the folder's free space.
void refuse_dumps_that_cannot_fit(const std::string& dir, const Plan& plan) {
  double need = 0, largest = 0;
  for (const CasePlan& cp : plan.cases)
    for (const PlanItem& item : cp.items) {
      const double bytes = 8.0 * double(cp.c.m) * double(cp.c.topk) + 256;
      largest = std::max(largest, bytes);
      need += bytes;
      for (const std::string& file : {dump_indices_path(dir, cp.c.id, item.version->id), dump_distances_path(dir, cp.c.id, item.version->id)}) {
        std::error_code ec;
        const auto old = std::filesystem::file_size(file, ec);
        if (!ec) need -= double(old);
      }
    }
  need = std::max(need, largest);  // each answer is whole beside the one it replaces, for a moment
  struct statvfs fsinfo {};
  if (::statvfs(dir.c_str(), &fsinfo) != 0) return;  // unknown: the writes themselves say so
  const double free_bytes = double(fsinfo.f_bavail) * double(fsinfo.f_frsize);
  if (need > free_bytes)
    throw ConfigError(fmt::format("--dump-answers {}: the answers of this run need {:.0f} bytes, the folder's file system has {:.0f} "
                                  "free; free some space or name another folder",
                                  dir, need, free_bytes));
}

// Before the first measurement: every output the run will write (--json and its journal, --md,
// --csv, the --dump-answers folder and each file it will hold) checked for its type and its folder's
// writability, the dumps' size against the folder's free space, and none of them an input or
// another output (output_file.hpp). Rank 0 writes the results files; every rank may dump answers.
void check_outputs(const RunOptions& opts, const Matrix& mx, const Plan& plan) {
  std::vector<NamedPath> outputs;
  if (mpi_world().root()) {
    for (const auto& [flag, path] : {std::pair{"--json", &opts.json_path}, std::pair{"--md", &opts.md_path}, std::pair{"--csv", &opts.csv_path}}) {
      check_output(flag, *path);
      outputs.push_back({flag, *path});
    }
    if (!opts.json_path.empty() && rewritable_output(opts.json_path)) {
      check_journal("--json " + opts.json_path, journal_path(opts.json_path));
      outputs.push_back({"--json's journal", journal_path(opts.json_path)});
    }
  }
  if (const std::string& dir = opts.measure.dump_answers; !dir.empty()) {
    check_output_folder("--dump-answers", dir);
    for (const CasePlan& cp : plan.cases)
      for (const PlanItem& item : cp.items)
        for (const std::string& file : {dump_indices_path(dir, cp.c.id, item.version->id), dump_distances_path(dir, cp.c.id, item.version->id)}) {
          check_file_in_folder("--dump-answers", file);
          outputs.push_back({"--dump-answers", file});
        }
    refuse_dumps_that_cannot_fit(dir, plan);
  }
  refuse_overwriting(outputs, run_inputs(opts, mx));
}

// The run as the results describe it (host, matrix, measurement options, devices, every rank's
// place), and `env`, what the versions see of this process.
RunInfo describe_run(const RunOptions& opts, const Matrix& mx, Environment& env) {
  RunInfo info;
  info.argv = opts.argv;
  info.started_utc = utc_now_iso();
  info.host = read_host_info();
  info.host_facts = read_host_facts();
  info.matrix_file = mx.file;
  info.matrix_checksum = mx.checksum;
  info.warmup = opts.measure.warmup;
  info.min_samples = opts.measure.min_samples;
  info.min_time_s = opts.measure.min_time_s;
  info.max_time_s = opts.measure.max_time_s;
  info.max_noise_pct = opts.measure.max_noise_pct;
  info.max_samples = opts.measure.max_samples;
  info.validate = opts.measure.validate;
  info.validate_queries = opts.measure.validate_queries;

  const DeviceDiscovery disc = discover_devices();
  info.devices = select_devices(disc.devices, opts.devices, disc.note);
  info.device_note = disc.note;
  info.cuda_runtime_version = disc.runtime_version;
  info.cuda_driver_version = disc.driver_version;
  // Pinned memory needs a CUDA context; without a device the inputs are pageable, and say so.
  info.host_memory = info.devices.empty() ? HostMemory::pageable : host_memory_named(opts.host_memory);

  const MpiWorld& world = mpi_world();
  env.devices = info.devices;
  env.host_memory = info.host_memory;
  env.omp_threads = info.host.omp_threads;
  env.rank = world.rank, env.ranks = world.size, env.local_rank = world.local_rank;
  const DeviceInfo* gpu = rank_device(env);  // every rank's host and GPU, for the results (rank 0 keeps them)
  info.mpi_ranks = world.active ? world.size : 0;
  info.rank_places = mpi_gather_places(info.host.hostname, gpu ? fmt::format("{} ({})", gpu->ordinal, gpu->name) : "none");
  return info;
}

// Rank 0's reporters: the screen (not in an --isolate child), the results file (`json_path`: --json,
// else a new results/local/<host>-<utc>.json), --md and --csv; none on the other ranks.
std::vector<std::unique_ptr<Reporter>> open_reporters(const RunOptions& opts, const std::string& hostname, std::string& json_path) {
  std::vector<std::unique_ptr<Reporter>> reporters;
  if (!mpi_world().root()) return reporters;
  if (!opts.isolated_child) reporters.push_back(make_screen_reporter(opts.quiet));
  json_path = !opts.json_path.empty() ? opts.json_path : claim_default_results_path(fmt::format("results/local/{}-{}", hostname, utc_now_compact()));
  reporters.push_back(make_json_reporter(json_path));
  if (!opts.md_path.empty()) reporters.push_back(make_markdown_reporter(opts.md_path));
  if (!opts.csv_path.empty()) reporters.push_back(make_csv_reporter(opts.csv_path));
  const std::string dump_probe = opts.measure.dump_answers.empty() ? "" : (std::filesystem::path(opts.measure.dump_answers) / "x.npy").string();
  remove_stale_temporaries({json_path, opts.md_path, opts.csv_path, dump_probe});  // what killed runs left behind
  for (const std::string& out : {json_path, opts.md_path, opts.csv_path})
    if (names_standard_output(out)) reserve_standard_output_for_data();  // the screen's lines go to stderr
  return reporters;
}

// The versions of case `cp` run the way `way`: the case prepared once for them, then each through
// that way's executor, its result to the reporters.
void run_versions(const CasePlan& cp, Way way, const Bench& b) {
  const std::vector<const PlanItem*> items = cp.items_of(way);
  if (items.empty()) return;  // nor is the case's data made for nothing
  const std::unique_ptr<PreparedCase> data = prepare_case(b.mx, cp, way, b.env, b.measure, b.report);
  const std::unique_ptr<Executor> executor = make_executor(way, *data, b.opts, b.measure, b.env);
  std::vector<std::vector<const PlanItem*>> groups;  // --interleave: a version's two settings together
  if (b.opts.interleave) groups = interleave_groups(items);
  else
    for (const PlanItem* item : items) groups.push_back({item});
  for (const std::vector<const PlanItem*>& group : groups) {
    if (executor->stops_between_versions() && stop_requested()) break;
    if (group.size() == 1) b.report.finish(executor->run(*group[0], b.report));
    else
      for (Result& r : executor->run_pair(*group[0], *group[1], b.report)) b.report.finish(std::move(r));
  }
}

// One case: its sharded versions on every rank, then on rank 0 the others while the other ranks wait.
void run_case(const CasePlan& cp, const Bench& b) {
  run_versions(cp, Way::sharded, b);
  if (!mpi_world().root()) {
    mpi_wait_all();  // while rank 0 runs the other versions
    return;
  }
  struct WaitForRanks {  // rank 0 meets the other ranks when the case is done, however it ends
    ~WaitForRanks() {
      if (std::uncaught_exceptions() == 0) mpi_wait_all();
    }
  } wait_for_ranks;
  run_versions(cp, b.opts.isolate ? Way::isolated : Way::in_process, b);
}

// "Results: FILE"; after an interrupt 128 + the signal, else 1 when a result failed, else 0.
int exit_code(const RunOptions& opts, const RunReport& report, const std::string& json_path) {
  const MpiWorld& world = mpi_world();
  if (world.root() && !opts.quiet && !opts.isolated_child) fmt::print("Results: {}\n", json_path);
  if (world.root() && stop_requested()) {
    const int sig = stop_signal() ? stop_signal() : SIGINT;
    fmt::print(stderr, "knnbench: {}; {} finished results saved in {}\n", sig == SIGTERM ? "terminated" : "interrupted",
               report.results().size(), json_path);
    return 128 + sig;  // 130 after Ctrl-C, 143 after SIGTERM, as shells report them
  }
  const auto undumped = std::count_if(report.results().begin(), report.results().end(),
                                      [](const Result& r) { return r.note.find(kAnswerNotDumped) != std::string::npos; });
  if (undumped > 0) {  // the measurements are all kept; the answers asked for are not all there
    fmt::print(stderr, "knnbench: --dump-answers {}: {} answer{} not written (the notes in {} say why); every measurement is kept\n",
               opts.measure.dump_answers, undumped, undumped == 1 ? "" : "s", json_path);
    return kExitUsage;
  }
  return report.any_fail() ? kExitValidationFailed : kExitOk;
}

// Where the finished results are when a final write failed: the journal (the results file's
// header holds none) or the complete results file.
std::string where_results_are(const std::string& json_path, std::size_t finished) {
  if (json_path.empty()) return "";
  const std::string journal = journal_path(json_path);
  if (std::filesystem::exists(journal))
    return fmt::format("the finished results ({}) are kept in the journal {} beside {}: keep both; `knnbench report {} --md FILE` "
                       "(or --csv FILE) reads them",
                       finished, journal, json_path, json_path);
  if (rewritable_output(json_path))
    return fmt::format("the results are complete in {}: `knnbench report {} --md FILE --csv FILE` writes the others again", json_path, json_path);
  return "";
}

}  // namespace

// The default results file, <stem>.json, or <stem>-2.json, -3, ... when a run in the same second took
// it: the name is claimed by creating the file (O_EXCL), so two runs never write the same file.
std::string claim_default_results_path(const std::string& stem) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(stem).parent_path(), ec);
  for (int i = 1; i < 1000; ++i) {
    const std::string path = i == 1 ? stem + ".json" : fmt::format("{}-{}.json", stem, i);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      return path;
    }
    if (errno != EEXIST) break;
  }
  throw ConfigError(fmt::format("{}.json: cannot claim a results file name ({}); give one with --json", stem, std::strerror(errno)));
}

Matrix run_matrix(const RunOptions& opts) { return opts.adhoc_case.empty() ? load_matrix(opts.config) : adhoc_matrix(opts.adhoc_case); }

int run_benchmark(const RunOptions& opts) {
  refuse_isolate_under_mpirun(opts);
  const Matrix mx = run_matrix(opts);
  std::vector<Case> cases = select_cases(mx, opts.case_specs, opts.groups);
  if (opts.ignore_matrix_params)
    for (Case& c : cases) c.param_specs.clear();  // an --isolate child: its --param is the variant
  const Plan plan = make_plan(cases, select_versions(opts.version_specs),
                              PlanChoices{opts.seed, opts.measure.validate_queries, opts.isolate, mpi_world().many(), opts.param_specs, mx.file});
  if (opts.interleave) refuse_what_interleave_cannot_do(opts, plan);
  check_outputs(opts, mx, plan);
  if (mpi_world().root() && !opts.isolated_child) fmt::print(stderr, "{}", set_aside_warning(cases, mx.file));

  Environment env;
  RunInfo info = describe_run(opts, mx, env);
  std::string json_path;  // rank 0's results file
  std::vector<std::unique_ptr<Reporter>> reporters = open_reporters(opts, info.host.hostname, json_path);
  RunReport report(std::move(info), std::move(reporters), plan.total(), mpi_world().root());
  if (opts.isolate) remove_stale_isolate_files();
  install_signal_handlers();
  report.info().warmup_ms = warm_up_devices(env.devices);  // before any measurement, on every selected GPU at once
  // Then each GPU's rates, for the floors (rank 0 reports; the other ranks measure none). An
  // --isolate child takes its parent's; the parent hands its own to every child.
  RatesMeasurement rates = opts.rates_given ? RatesMeasurement{opts.given_rates, opts.given_rates_note}
                                            : measure_device_rates(env.devices, opts.measure.rates && mpi_world().root(), report.info().device_note);
  report.info().device_rates = rates.rates;
  report.info().rates_note = rates.note;
  RunOptions run_opts = opts;
  if (opts.isolate) run_opts.rates_given = true, run_opts.given_rates = std::move(rates.rates), run_opts.given_rates_note = std::move(rates.note);
  report.begin();
  const HostInfo& host = report.info().host;
  if (mpi_world().root() && host_busy(host) && !opts.quiet && !opts.isolated_child)
    fmt::print("knnbench: warning: busy machine (load {:.2f}, {} logical CPUs, {} OpenMP threads): times may be noisy\n",
               host.load_1min, host.cores, host.omp_threads);

  MeasureOptions measure = opts.measure;
  measure.kill_after_max_time = opts.isolated_child;  // an --isolate child ends itself when a call overruns
  const Bench bench{run_opts, mx, env, measure, report};
  for (const CasePlan& cp : plan.cases) {
    if (mpi_world().many() ? mpi_any(stop_requested()) : stop_requested()) break;
    run_case(cp, bench);
  }
  try {
    report.end(!stop_requested());
  } catch (const ConfigError& e) {  // a final write failed: say where what finished is
    const std::string where = where_results_are(json_path, report.results().size());
    throw ConfigError(where.empty() ? std::string(e.what()) : fmt::format("{}\n{}", e.what(), where));
  }
  return exit_code(opts, report, json_path);
}

}  // namespace knn
