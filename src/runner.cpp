#include "runner.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <cstring>
#include <cerrno>
#include <unistd.h>
#include <fcntl.h>

#include <cmath>
#include <csignal>
#include <exception>
#include <optional>
#include <set>

#include "core/errors.hpp"
#include "data.hpp"
#include "datafile.hpp"
#include "devices.hpp"
#include "host_memory.hpp"
#include "output_file.hpp"
#include "interrupt.hpp"
#include "isolate.hpp"
#include "measure.hpp"
#include "mpi_env.hpp"
#include "report.hpp"
#include "selection.hpp"
#include "sharded_case.hpp"
#include "skip_reasons.hpp"
#include "sysinfo.hpp"
#include "value_range.hpp"

namespace knn {
namespace {

// A case's queries or references: read from its data file when it names one, else generated.
// The file was inspected when the matrix was loaded; one that no longer matches, or holds NaN
// or Inf, is a ConfigError here (exit 2).
void fill_points(const Matrix& mx, const Case& c, PointSet set, float* out) {
  const bool queries = set == PointSet::queries;
  const std::string& path = queries ? c.queries_path : c.references_path;
  const int count = queries ? c.m : c.n;
  if (path.empty()) {
    generate_points(c.distribution, c.seed, set, c.dim, std::size_t(count), out, c.integer_max);
    return;
  }
  try {
    const DataFileInfo info = inspect_data_file(path, std::uint64_t(c.dim));
    expect_shape(info, std::uint64_t(count), queries ? "m" : "n", std::uint64_t(c.dim));
    read_data_file(info, out);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: case {}: {}: {}", mx.file, c.id, queries ? "queries_file" : "references_file", e.what()));
  }
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
  if (opts.measure.min_samples < 1) throw ConfigError(fmt::format("--min-samples {}: expected at least 1", opts.measure.min_samples));
  if (opts.measure.warmup < 0) throw ConfigError(fmt::format("--warmup {}: expected 0 or more", opts.measure.warmup));
  if (!(opts.measure.max_time_s > 0)) throw ConfigError(fmt::format("--max-time {}: expected seconds > 0", opts.measure.max_time_s));
  if (opts.measure.max_samples < opts.measure.min_samples)
    throw ConfigError(fmt::format("--max-samples {}: expected at least --min-samples {}", opts.measure.max_samples, opts.measure.min_samples));
  if (!(opts.measure.max_noise_pct >= 0))
    throw ConfigError(fmt::format("--max-noise {}: expected a percentage ≥ 0", opts.measure.max_noise_pct));
  if (!(opts.measure.min_time_s >= 0) || !std::isfinite(opts.measure.min_time_s))
    throw ConfigError(fmt::format("--min-time {}: expected a finite number of seconds ≥ 0", opts.measure.min_time_s));
  if (!std::isfinite(opts.measure.max_time_s))
    throw ConfigError(fmt::format("--max-time {}: expected a finite number of seconds > 0", opts.measure.max_time_s));
  if (!std::isfinite(opts.measure.max_noise_pct))
    throw ConfigError(fmt::format("--max-noise {}: expected a finite percentage ≥ 0", opts.measure.max_noise_pct));
  if (opts.measure.validate_queries < 0)
    throw ConfigError(fmt::format("--validate-queries {}: expected 0 (every query) or a positive count", opts.measure.validate_queries));
  // An empty item ("--case ''", "--version ''") selects nothing: it is a mistake, not "everything".
  for (const auto& [flag, items] : {std::pair{"--case", &opts.case_specs}, std::pair{"--version", &opts.version_specs},
                                     std::pair{"--group", &opts.groups}})
    for (const std::string& item : *items)
      if (item.find_first_not_of(", ") == std::string::npos)
        throw ConfigError(fmt::format("{} '{}': expected ids or names, not an empty value", flag, item));
  HostMemory wanted_memory;
  if (opts.host_memory == "pinned") wanted_memory = HostMemory::pinned;
  else if (opts.host_memory == "pageable") wanted_memory = HostMemory::pageable;
  else throw ConfigError(fmt::format("--host-memory {}: expected pinned or pageable", opts.host_memory));

  refuse_same_files({{"--json", opts.json_path}, {"--md", opts.md_path}, {"--csv", opts.csv_path}, {"--config", opts.config}});
  if (!opts.measure.dump_answers.empty()) {  // an unusable folder stops the run before anything is measured
    std::error_code ec;
    std::filesystem::create_directories(opts.measure.dump_answers, ec);
    if (ec || !std::filesystem::is_directory(opts.measure.dump_answers))
      throw ConfigError(fmt::format("--dump-answers {}: cannot create the folder ({})", opts.measure.dump_answers,
                                    ec ? ec.message() : "not a directory"));
  }
  const MpiWorld& world = mpi_world();
  if (world.many() && (opts.isolate || opts.isolated_child))
    throw ConfigError("--isolate: not under mpirun (every rank must run the same calls in one process)");
  Matrix mx = run_matrix(opts);
  {  // nor may an output replace a case's data file
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
  const std::vector<Case> cases = select_cases(mx, opts.case_specs, opts.groups);
  const auto versions = select_versions(opts.version_specs);

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
  info.host_memory = info.devices.empty() ? HostMemory::pageable : wanted_memory;

  Environment env;
  env.devices = info.devices;
  env.host_memory = info.host_memory;
  env.omp_threads = info.host.omp_threads;
  env.rank = world.rank, env.ranks = world.size, env.local_rank = world.local_rank;
  {  // every rank's host and GPU, for the results (rank 0 keeps them)
    const DeviceInfo* gpu = rank_device(env);
    info.mpi_ranks = world.active ? world.size : 0;
    info.rank_places = mpi_gather_places(info.host.hostname, gpu ? fmt::format("{} ({})", gpu->ordinal, gpu->name) : "none");
  }
  // Under mpirun with several ranks, versions that shard the references run on every rank; the
  // others run on rank 0 alone, with every reference, while the other ranks wait.
  std::vector<const VersionDesc*> sharded, whole;
  for (const VersionDesc* v : versions) (world.many() && v->shards_references ? sharded : whole).push_back(v);

  std::vector<std::unique_ptr<Reporter>> reporters;
  MeasureOptions measure = opts.measure;
  measure.kill_after_max_time = opts.isolated_child;
  std::string json_path;
  if (world.root()) {  // rank 0 alone prints and writes
    if (!opts.isolated_child) reporters.push_back(make_screen_reporter(opts.quiet));
    json_path = !opts.json_path.empty() ? opts.json_path
                                        : claim_default_results_path(fmt::format("results/local/{}-{}", info.host.hostname, utc_now_compact()));
    reporters.push_back(make_json_reporter(json_path));
    if (!opts.md_path.empty()) reporters.push_back(make_markdown_reporter(opts.md_path));
    if (!opts.csv_path.empty()) reporters.push_back(make_csv_reporter(opts.csv_path));
    remove_stale_temporaries({json_path, opts.md_path, opts.csv_path});  // what killed runs left behind
    for (const std::string& out : {json_path, opts.md_path, opts.csv_path})
      if (names_standard_output(out)) reserve_standard_output_for_data();  // the screen's lines go to stderr
  }
  if (opts.isolate) remove_stale_isolate_files();

  install_signal_handlers();
  info.warmup_ms = warm_up_devices(info.devices);  // before any measurement, on every selected GPU at once
  for (auto& rep : reporters) rep->begin(info);
  if (world.root() && host_busy(info.host) && !opts.quiet && !opts.isolated_child)
    fmt::print("knnbench: warning: busy machine (load {:.2f}, {} logical CPUs, {} OpenMP threads): times may be noisy\n",
               info.host.load_1min, info.host.cores, info.host.omp_threads);

  std::vector<Result> results;
  bool any_fail = false;
  const int total = int(cases.size() * versions.size());
  int index = 0;
  auto announce = [&](const Case& c, const VersionDesc& v) {
    for (auto& rep : reporters) rep->start(info, c, v.id, index, total);
    ++index;
  };
  auto finish = [&](Result r) {
    any_fail = any_fail || r.status == Status::fail;
    results.push_back(std::move(r));
    for (auto& rep : reporters) rep->result(info, results);
  };
  // A bad data file found mid-run stops it (ConfigError, exit 2), but what finished is saved whole first.
  struct SaveOnError {
    RunInfo& info;
    const std::vector<Result>& results;
    std::vector<std::unique_ptr<Reporter>>& reporters;
    const int active = std::uncaught_exceptions();
    ~SaveOnError() {
      if (std::uncaught_exceptions() <= active) return;
      info.complete = false;
      try {
        for (auto& rep : reporters) rep->end(info, results);
      } catch (const std::exception&) {  // the error in flight is the one to report
      }
    }
  } save_on_error{info, results, reporters};
  for (const Case& original : cases) {
    if (world.many() ? mpi_any(stop_requested()) : stop_requested()) break;
    Case c = original;
    if (opts.seed) c.seed = *opts.seed;
    Result base;
    base.problem_case = c;
    const int validate_queries = measure.validate_queries > 0 ? measure.validate_queries : c.validate_queries;
    run_sharded_versions(mx, c, sharded, env, measure, validate_queries, base, [&](const VersionDesc& v) { announce(c, v); }, finish);
    if (!world.root()) {
      mpi_wait_all();  // while rank 0 runs the other versions
      continue;
    }
    struct WaitForRanks {  // rank 0 meets the other ranks when the case is done, however it ends
      ~WaitForRanks() {
        if (std::uncaught_exceptions() == 0) mpi_wait_all();
      }
    } wait_for_ranks;
    if (whole.empty()) continue;  // nor does rank 0 generate every reference for nothing

    const auto announce_case = [&](const VersionDesc& v) { announce(c, v); };
    if (!c.missing_data.empty()) {  // a data file to fetch first: skipped with the command, not an error
      skip_versions(whole, base, c.missing_data, announce_case, finish);  // the sharded ones said theirs above
      continue;
    }

    if (opts.isolate) {  // the children generate the data and validate; the parent only collects
      for (const VersionDesc* v : whole) {
        if (stop_requested()) break;
        announce(c, *v);
        finish(run_isolated(opts, c, *v));
      }
      continue;
    }

    // A self-join has one point set: the references, which are also the queries.
    const std::size_t qf = c.self_join ? 0 : std::size_t(c.m) * c.dim, rf = std::size_t(c.n) * c.dim,
                      slots = std::size_t(c.m) * c.topk;
    const double need = 4.0 * double(qf + rf) + 8.0 * 2.0 * double(slots);
    const double have = double(usable_host_memory());  // RLIMIT_AS and the cgroup's limit count
    auto skip_all = [&](const std::string& reason) { skip_versions(whole, base, reason, announce_case, finish); };
    if (have > 0 && need > 0.9 * have) {
      skip_all(skip_reason::host_memory(need, have));
      continue;
    }

    for (auto& rep : reporters) rep->step(c, c.queries_file.empty() && c.references_file.empty() ? "generating data" : "reading data");
    std::optional<HostArray> queries, references;
    try {  // a limit the estimate missed (ulimit -v, overcommit) skips this case; the run goes on
      queries.emplace(qf, info.host_memory);
      references.emplace(rf, info.host_memory);
    } catch (const std::bad_alloc&) {
      queries.reset();
      references.reset();
      skip_all(skip_reason::out_of_host_memory("allocating the inputs", need, double(usable_host_memory())));
      continue;
    }
    if (!c.self_join) fill_points(mx, c, PointSet::queries, queries->data());
    fill_points(mx, c, PointSet::references, references->data());
    const float* query_points = c.self_join ? references->data() : queries->data();
    refuse_overflowing_distances(mx.file, c, query_points, references->data());
    base.query_checksum = to_hex(checksum(query_points, std::size_t(c.m) * c.dim));
    base.reference_checksum = to_hex(checksum(references->data(), rf));
    Problem problem{c.dim, c.m, c.n, c.topk, query_points, references->data(), c.self_join};
    problem.values = examine_values(query_points, qf, references->data(), rf);  // qf is 0 in a self-join
    const Problem& p = problem;
    // --validate-queries (above) wins; else the case's own sample size (large cases), else every query.

    std::optional<Reference> reference;
    Reference file_truth;  // the data file's own ground truth (HDF5 "neighbors"), when it has one
    std::string no_truth;
    // The case's ground_truth_file, else an HDF5 queries file's own "neighbors".
    const std::string truth = !c.ground_truth_path.empty() ? c.ground_truth_path
                              : !c.queries_path.empty() && data_format_of(c.queries_path) == DataFormat::hdf5 ? c.queries_path
                                                                                                           : std::string();
    bool has_truth = false;
    try {
      has_truth = measure.validate && !truth.empty() &&
                  read_ground_truth(truth, std::uint64_t(c.m), std::uint64_t(c.n), c.topk, file_truth.indices, no_truth);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: case {}: ground truth: {}", mx.file, c.id, e.what()));
    }
    if (has_truth) {
      file_truth.name = c.ground_truth_file.empty() ? "neighbors of " + data_file_on_disk(c.queries_file) : c.ground_truth_file;
      for (int q = 0; q < c.m; ++q) file_truth.rows.push_back(q);
    }
    for (const VersionDesc* v : whole) {
      if (stop_requested()) break;
      Result r = base;
      if (measure.validate && !reference && !why_skipped(*v, p, env)) {
        for (auto& rep : reporters) rep->step(c, "validation reference (v0 on every core)");
        try {
          reference = compute_reference(p, validate_queries);
          if (has_truth) reference->also = &file_truth;
          else if (!truth.empty() && (!no_truth.empty() || !c.ground_truth_path.empty()))  // said, never silent
            reference->name += fmt::format(" ({} not used: {})", c.ground_truth_file.empty() ? data_file_on_disk(c.queries_file) : c.ground_truth_file,
                                           no_truth.empty() ? std::string("it holds no \"neighbors\" dataset") : no_truth);
        } catch (const std::bad_alloc&) {
          r.version = v->id;
          r.title = v->title;
          r.family = to_string(v->family);
          r.status = Status::skip;
          r.reason = skip_reason::out_of_host_memory("computing the validation reference", need, double(usable_host_memory()));
          announce(c, *v);
          finish(std::move(r));
          continue;
        }
      }
      announce(c, *v);
      measure_version(*v, p, env, measure, reference ? &*reference : nullptr, r);
      if (v->gpus != GpuNeed::none) trim_device_pools(env.devices);
      finish(std::move(r));
    }
  }
  info.complete = !stop_requested();
  for (auto& rep : reporters) rep->end(info, results);
  if (world.root() && !opts.quiet && !opts.isolated_child) fmt::print("Results: {}\n", json_path);
  if (world.root() && stop_requested()) {
    const int sig = stop_signal() ? stop_signal() : SIGINT;
    fmt::print(stderr, "knnbench: {}; {} finished results saved in {}\n", sig == SIGTERM ? "terminated" : "interrupted",
               results.size(), json_path);
    return 128 + sig;  // 130 after Ctrl-C, 143 after SIGTERM, as shells report them
  }
  return any_fail ? kExitValidationFailed : kExitOk;
}

void skip_versions(const std::vector<const VersionDesc*>& versions, const Result& base, const std::string& reason,
                   const std::function<void(const VersionDesc&)>& announce, const std::function<void(Result)>& finish) {
  for (const VersionDesc* v : versions) {
    Result r = base;
    r.version = v->id;
    r.title = v->title;
    r.family = to_string(v->family);
    r.status = Status::skip;
    r.reason = reason;
    announce(*v);
    finish(std::move(r));
  }
}

}  // namespace knn
