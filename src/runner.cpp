#include "runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <set>

#include "core/errors.hpp"
#include "datafile.hpp"
#include "devices.hpp"
#include "executor.hpp"
#include "host_memory.hpp"
#include "interrupt.hpp"
#include "isolate.hpp"
#include "mpi_env.hpp"
#include "output_file.hpp"
#include "plan.hpp"
#include "prepare.hpp"
#include "report.hpp"
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

// Before anything is read or measured: no output over another or over the matrix, a
// --dump-answers folder that exists, and no --isolate under mpirun.
void refuse_unusable_outputs(const RunOptions& opts) {
  refuse_same_files({{"--json", opts.json_path}, {"--md", opts.md_path}, {"--csv", opts.csv_path}, {"--config", opts.config}});
  if (!opts.measure.dump_answers.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(opts.measure.dump_answers, ec);
    if (ec || !std::filesystem::is_directory(opts.measure.dump_answers))
      throw ConfigError(fmt::format("--dump-answers {}: cannot create the folder ({})", opts.measure.dump_answers,
                                    ec ? ec.message() : "not a directory"));
  }
  if (mpi_world().many() && (opts.isolate || opts.isolated_child))
    throw ConfigError("--isolate: not under mpirun (every rank must run the same calls in one process)");
}

// Nor may an output replace a case's data file.
void refuse_overwriting_data(const Matrix& mx, const RunOptions& opts) {
  std::vector<std::pair<std::string, std::string>> named{{"--json", opts.json_path}, {"--md", opts.md_path}, {"--csv", opts.csv_path}};
  std::set<std::string> seen;  // cases may share a data file (and an HDF5 file holds both sets): each once
  for (const Case& c : mx.cases)
    for (const std::string* data : {&c.queries_path, &c.references_path}) {
      std::error_code ec;
      if (!data->empty() && seen.insert(std::filesystem::weakly_canonical(data_file_on_disk(*data), ec).string()).second)
        named.emplace_back(fmt::format("case {}'s data file", c.id), data_file_on_disk(*data));
    }
  refuse_same_files(named);
}

// The run as the results describe it (host, matrix, measurement options, devices, every rank's
// place), and `env`, what the versions see of this process.
RunInfo describe_run(const RunOptions& opts, const Matrix& mx, Environment& env) {
  RunInfo info;
  info.argv = opts.argv;
  info.started_utc = utc_now_iso();
  info.host = read_host_info();
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
  remove_stale_temporaries({json_path, opts.md_path, opts.csv_path});  // what killed runs left behind
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
  for (const PlanItem* item : items) {
    if (executor->stops_between_versions() && stop_requested()) break;
    b.report.finish(executor->run(*item, b.report));
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
  return report.any_fail() ? kExitValidationFailed : kExitOk;
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
  refuse_unusable_outputs(opts);
  const Matrix mx = run_matrix(opts);
  refuse_overwriting_data(mx, opts);
  std::vector<Case> cases = select_cases(mx, opts.case_specs, opts.groups);
  if (opts.ignore_matrix_params)
    for (Case& c : cases) c.param_specs.clear();  // an --isolate child: its --param is the variant
  const Plan plan = make_plan(cases, select_versions(opts.version_specs),
                              PlanChoices{opts.seed, opts.measure.validate_queries, opts.isolate, mpi_world().many(), opts.param_specs});

  Environment env;
  RunInfo info = describe_run(opts, mx, env);
  std::string json_path;  // rank 0's results file
  std::vector<std::unique_ptr<Reporter>> reporters = open_reporters(opts, info.host.hostname, json_path);
  RunReport report(std::move(info), std::move(reporters), plan.total(), mpi_world().root());
  if (opts.isolate) remove_stale_isolate_files();
  install_signal_handlers();
  report.info().warmup_ms = warm_up_devices(env.devices);  // before any measurement, on every selected GPU at once
  report.begin();
  const HostInfo& host = report.info().host;
  if (mpi_world().root() && host_busy(host) && !opts.quiet && !opts.isolated_child)
    fmt::print("knnbench: warning: busy machine (load {:.2f}, {} logical CPUs, {} OpenMP threads): times may be noisy\n",
               host.load_1min, host.cores, host.omp_threads);

  MeasureOptions measure = opts.measure;
  measure.kill_after_max_time = opts.isolated_child;  // an --isolate child ends itself when a call overruns
  const Bench bench{opts, mx, env, measure, report};
  for (const CasePlan& cp : plan.cases) {
    if (mpi_world().many() ? mpi_any(stop_requested()) : stop_requested()) break;
    run_case(cp, bench);
  }
  report.end(!stop_requested());
  return exit_code(opts, report, json_path);
}

}  // namespace knn
