#include "runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <limits>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "data.hpp"
#include "datafile.hpp"
#include "devices.hpp"
#include "core/errors.hpp"
#include "host_memory.hpp"
#include "report.hpp"
#include "selection.hpp"
#include "sysinfo.hpp"

namespace knn {
namespace {

std::atomic<int> g_signals{0};

extern "C" void on_signal(int sig) {
  if (g_signals.fetch_add(1) >= 1) {
    // Second interrupt: leave at once. The results file on disk is already valid JSON.
    const char msg[] = "\nknnbench: interrupted again, exiting now\n";
    (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
    std::_Exit(128 + sig);
  }
  const char msg[] = "\nknnbench: interrupted; finishing the call in flight and saving results (Ctrl-C again to quit now)\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
}

double elapsed_ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

std::string gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }

// A case's queries or references: read from its data file when it names one, else generated.
// The file was inspected when the matrix was loaded; one that no longer matches, or holds NaN
// or Inf, is a ConfigError here (exit 2).
void fill_points(const Matrix& mx, const Case& c, PointSet set, float* out) {
  const bool queries = set == PointSet::queries;
  const std::string& path = queries ? c.queries_path : c.references_path;
  const int count = queries ? c.m : c.n;
  if (path.empty()) {
    generate_points(c.distribution, c.seed, set, c.dim, std::size_t(count), out);
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

bool stop_requested() { return g_signals.load() > 0; }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::vector<Case> select_cases(const Matrix& mx, const std::vector<std::string>& case_specs, const std::vector<std::string>& groups) {
  std::vector<int> valid;
  for (const auto& c : mx.cases) valid.push_back(c.id);
  std::vector<int> wanted;
  for (const auto& item : split_commas(case_specs)) {
    int lo = 0, hi = 0;
    if (!parse_case_range(item, lo, hi)) throw ConfigError(fmt::format("--case {}: expected a case id, a range like 8-11, or a comma list", item));
    for (int id = lo; id <= hi; ++id) {
      if (std::find(valid.begin(), valid.end(), id) == valid.end())
        throw ConfigError(fmt::format("--case {}: no case {} in {} (valid ids: {})", item, id, mx.file, join_ints(valid)));
      wanted.push_back(id);
    }
  }
  std::vector<std::string> known_groups;
  for (const auto& c : mx.cases)
    for (const auto& g : c.groups)
      if (std::find(known_groups.begin(), known_groups.end(), g) == known_groups.end()) known_groups.push_back(g);
  const auto group_list = split_commas(groups);
  for (const auto& g : group_list) {
    if (std::find(known_groups.begin(), known_groups.end(), g) == known_groups.end()) {
      std::string list;
      for (const auto& k : known_groups) list += (list.empty() ? "" : ", ") + k;
      throw ConfigError(fmt::format("--group {}: no such group in {} (groups: {})", g, mx.file, list.empty() ? "none" : list));
    }
  }
  std::vector<Case> out;
  for (const auto& c : mx.cases) {
    bool take = wanted.empty() && group_list.empty();
    take = take || std::find(wanted.begin(), wanted.end(), c.id) != wanted.end();
    for (const auto& g : group_list) take = take || std::find(c.groups.begin(), c.groups.end(), g) != c.groups.end();
    if (take) out.push_back(c);
  }
  return out;
}

std::vector<const VersionDesc*> select_versions(const std::vector<std::string>& version_specs) {
  const auto& all = Registry::instance().versions();
  const auto items = split_commas(version_specs);
  std::vector<const VersionDesc*> out;
  if (items.empty()) {
    for (const auto& v : all) out.push_back(&v);
    return out;
  }
  for (const auto& id : items) {
    const VersionDesc* d = Registry::instance().find(id);
    if (!d) {
      std::string list;
      for (const auto& v : all) list += (list.empty() ? "" : ", ") + v.id;
      throw ConfigError(fmt::format("--version {}: no such version (registered: {})", id, list));
    }
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  std::sort(out.begin(), out.end(), [&all](const VersionDesc* a, const VersionDesc* b) { return a - all.data() < b - all.data(); });
  return out;
}

std::vector<DeviceInfo> select_devices(const std::vector<DeviceInfo>& all, const std::string& spec, const std::string& none_note) {
  if (spec == "all" || spec.empty()) return all;
  std::vector<DeviceInfo> out;
  std::vector<int> present;
  for (const auto& d : all) present.push_back(d.ordinal);
  for (const auto& item : split_commas({spec})) {
    int lo = -1, hi = -1;
    if (!parse_case_range(item, lo, hi))
      throw ConfigError(fmt::format("--devices {}: expected \"all\", device ordinals like 0,1, or a range like 0-3", spec));
    for (int id = lo; id <= hi; ++id) {
      auto it = std::find_if(all.begin(), all.end(), [id](const DeviceInfo& d) { return d.ordinal == id; });
      if (it == all.end())
        throw ConfigError(fmt::format("--devices {}: device {} is not present ({})", spec, id,
                                      all.empty() ? none_note : "present: " + join_ints(present)));
      if (std::none_of(out.begin(), out.end(), [id](const DeviceInfo& d) { return d.ordinal == id; })) out.push_back(*it);
    }
  }
  return out;
}

void measure_version(const VersionDesc& desc, const Problem& p, const Environment& env, const MeasureOptions& opts,
                     const Reference* reference, Result& r) {
  r.version = desc.id;
  r.title = desc.title;
  r.family = to_string(desc.family);
  r.host_memory = env.host_memory;
  if (desc.gpus != GpuNeed::none && env.devices.empty()) {
    r.status = Status::skip;
    r.reason = "no CUDA device";
    return;
  }
  if (desc.supports) {
    if (auto why = desc.supports(p, env)) {
      r.status = Status::skip;
      r.reason = *why;
      return;
    }
  }
  if (desc.device_bytes && !env.devices.empty()) {
    // Checked before anything is allocated; cudaErrorMemoryAllocation is still caught below.
    const std::size_t need = desc.device_bytes(p, env);
    const std::size_t used = desc.gpus == GpuNeed::one ? 1 : env.devices.size();
    for (std::size_t i = 0; i < used; ++i) {
      const std::size_t have = device_free_memory(env.devices[i].ordinal);
      if (have > 0 && need > have) {
        r.status = Status::skip;
        r.reason = fmt::format("needs {}, device {} has {} free", gib(double(need)), env.devices[i].ordinal, gib(double(have)));
        return;
      }
    }
  }

  const std::size_t slots = p.result_slots();
  std::vector<std::int32_t> indices(slots);
  std::vector<float> distances(slots);
  TimingSink sink;

  // In an isolated child, a call over --max-time is stopped by ending the process.
  std::atomic<bool> watchdog_done{false};
  std::atomic<long long> call_started_ns{0};
  std::thread watchdog;
  if (opts.kill_after_max_time) {
    watchdog = std::thread([&] {
      while (!watchdog_done.load()) {
        const long long t0 = call_started_ns.load();
        const long long now = std::chrono::steady_clock::now().time_since_epoch().count();
        if (t0 != 0 && double(now - t0) * 1e-9 > opts.max_time_s) {
          const std::string msg = fmt::format("knnbench: stopped: a call of {} exceeded --max-time {} s\n", desc.id, opts.max_time_s);
          (void)!::write(STDERR_FILENO, msg.data(), msg.size());
          std::_Exit(124);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  struct JoinWatchdog {
    std::atomic<bool>& done;
    std::thread& t;
    ~JoinWatchdog() {
      done = true;
      if (t.joinable()) t.join();
    }
  } join_watchdog{watchdog_done, watchdog};

  // One timed call: a fresh instance, build (trees) and query, outputs poisoned first.
  auto call = [&](bool keep) {
    std::fill(indices.begin(), indices.end(), -1);
    std::fill(distances.begin(), distances.end(), std::numeric_limits<float>::quiet_NaN());
    sink.clear();
    RunContext ctx{sink, env, {}, {}};
    auto instance = desc.make();
    const auto t0 = std::chrono::steady_clock::now();
    call_started_ns = t0.time_since_epoch().count();
    instance->build(p, ctx);
    const auto t1 = std::chrono::steady_clock::now();
    instance->query(p, Neighbors{indices.data(), distances.data()}, ctx);
    const auto t2 = std::chrono::steady_clock::now();
    call_started_ns = 0;
    const double total = elapsed_ms(t0, t2);
    if (keep) {
      r.samples_ms.push_back(total);
      if (desc.has_build) r.phase_samples_ms["build"].push_back(elapsed_ms(t0, t1));
      r.phase_samples_ms["query"].push_back(elapsed_ms(t1, t2));
      for (const auto& [name, ms] : sink.phases())
        if (name != "build" && name != "query") r.phase_samples_ms[name].push_back(ms);
      for (const auto& [dev, phases] : sink.device_phases())
        for (const auto& [name, ms] : phases) r.device_phase_samples_ms[dev][name].push_back(ms);
    }
    r.path = ctx.path;
    r.devices_used = ctx.devices_used;
    return total;
  };

  try {
    const double max_ms = opts.max_time_s * 1e3;
    bool measured = false;
    for (int w = 0; w < opts.warmup && !stop_requested(); ++w) {
      if (call(false) > max_ms) {
        // A single call over the whole budget: measure it once more would double a long run.
        // Keep the warm-up call as the one sample and say so.
        r.samples_ms.clear();
        r.phase_samples_ms.clear();
        r.device_phase_samples_ms.clear();
        call(true);
        r.note = fmt::format("one sample: a call takes longer than --max-time {} s", opts.max_time_s);
        measured = true;
        break;
      }
    }
    if (!measured) {
      double total = 0;
      do {
        total += call(true);
        const double next = r.samples_ms.back();
        const bool enough = int(r.samples_ms.size()) >= opts.min_samples && total >= opts.min_time_s * 1e3;
        if (enough || int(r.samples_ms.size()) >= opts.max_samples || total + next > max_ms || stop_requested()) break;
      } while (true);
      if (int(r.samples_ms.size()) < opts.min_samples && !stop_requested())
        r.note = fmt::format("{} samples: --max-time {} s reached", r.samples_ms.size(), opts.max_time_s);
    }
  } catch (const OutOfMemoryError& e) {
    r.status = Status::skip;
    r.reason = e.what();
    r.samples_ms.clear();
    r.phase_samples_ms.clear();
    r.device_phase_samples_ms.clear();
    return;
  } catch (const std::bad_alloc&) {
    r.status = Status::skip;
    r.reason = "out of host memory";
    r.samples_ms.clear();
    r.phase_samples_ms.clear();
    r.device_phase_samples_ms.clear();
    return;
  } catch (const std::exception& e) {
    r.status = Status::fail;
    r.reason = std::string("error: ") + e.what();
    return;
  }
  r.stats = summarize(r.samples_ms);

  if (opts.validate && reference) {
    r.validated = true;
    r.validation = validate_neighbors(p, *reference, indices.data());
    if (!r.validation.pass) {
      r.status = Status::fail;
      r.reason = fmt::format("validation: {} mismatches, {} invalid of {} neighbours; first: {}", r.validation.mismatches, r.validation.invalid,
                             r.validation.checked, r.validation.first_problem);
      return;
    }
  }
  r.status = Status::pass;
}

namespace {

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
  }
  return "signal " + std::to_string(sig);
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Runs one (case, version) in a child knnbench process (same binary, same options), so that a
// fault (an illegal address leaves the CUDA context broken for the whole process), a crash or a
// hang cannot take the run down. The child writes a one-result JSON file; the parent reads it,
// or records the child's signal or error as a failure.
Result run_isolated(const RunOptions& opts, const Case& c, const VersionDesc& v) {
  Result r;
  r.problem_case = c;
  r.version = v.id;
  r.title = v.title;
  r.family = to_string(v.family);
  const std::string tmp =
      (std::filesystem::temp_directory_path() / fmt::format("knnbench-{}-case{}-{}.json", ::getpid(), c.id, v.id)).string();
  std::remove(tmp.c_str());
  const MeasureOptions& m = opts.measure;
  std::vector<std::string> args{"knnbench", "--config", opts.config, "--case", std::to_string(c.id), "--version", v.id, "--json", tmp,
                                "--warmup", std::to_string(m.warmup), "--min-samples", std::to_string(m.min_samples),
                                "--max-samples", std::to_string(m.max_samples), "--min-time", fmt::format("{}", m.min_time_s),
                                "--max-time", fmt::format("{}", m.max_time_s), "--host-memory", opts.host_memory, "--devices", opts.devices,
                                "--isolated-child"};
  if (opts.seed) args.insert(args.end(), {"--seed", std::to_string(*opts.seed)});
  if (!m.validate) args.push_back("--no-validate");
  if (m.validate_queries > 0) args.insert(args.end(), {"--validate-queries", std::to_string(m.validate_queries)});

  int err_pipe[2];
  if (::pipe(err_pipe) != 0) throw std::runtime_error("--isolate: pipe() failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("--isolate: fork() failed");
  if (pid == 0) {
    ::close(err_pipe[0]);
    ::dup2(err_pipe[1], STDERR_FILENO);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    std::_Exit(127);
  }
  ::close(err_pipe[1]);
  // Collect the child's stderr; the backstop deadline covers data generation and the reference too.
  std::string err;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(3 * m.max_time_s * (m.warmup + 1) + 600);
  bool killed_by_us = false;
  for (;;) {
    pollfd pfd{err_pipe[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 200);
    if (ready > 0) {
      char buf[4096];
      const ssize_t got = ::read(err_pipe[0], buf, sizeof buf);
      if (got <= 0) break;
      err.append(buf, std::size_t(got));
      if (err.size() > 65536) err.erase(0, err.size() - 65536);
    }
    if (std::chrono::steady_clock::now() > deadline && !killed_by_us) {
      ::kill(pid, SIGKILL);
      killed_by_us = true;
    }
  }
  ::close(err_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  std::ifstream in(tmp);
  if (in) {
    try {
      const auto doc = nlohmann::json::parse(in);
      if (doc.at("results").size() == 1) {
        Result got = result_from_json(doc.at("results")[0]);
        std::remove(tmp.c_str());
        return got;
      }
    } catch (const std::exception&) {
      // fall through: recorded as a failure below
    }
  }
  std::remove(tmp.c_str());
  r.status = Status::fail;
  if (killed_by_us) {
    r.reason = "child process did not finish in time and was killed";
  } else if (WIFSIGNALED(status)) {
    r.reason = fmt::format("child process killed by {}", signal_name(WTERMSIG(status)));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 124) {
    r.status = Status::fail;
    r.reason = fmt::format("stopped: a call exceeded --max-time {} s", m.max_time_s);
  } else {
    r.reason = fmt::format("child process exited with code {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  const std::string tail = last_line(err);
  if (!tail.empty()) r.reason += ": " + tail;
  return r;
}

}  // namespace

int run_benchmark(const RunOptions& opts) {
  if (opts.measure.min_samples < 1) throw ConfigError(fmt::format("--min-samples {}: expected at least 1", opts.measure.min_samples));
  if (opts.measure.warmup < 0) throw ConfigError(fmt::format("--warmup {}: expected 0 or more", opts.measure.warmup));
  if (!(opts.measure.max_time_s > 0)) throw ConfigError(fmt::format("--max-time {}: expected seconds > 0", opts.measure.max_time_s));
  if (opts.measure.max_samples < opts.measure.min_samples)
    throw ConfigError(fmt::format("--max-samples {}: expected at least --min-samples {}", opts.measure.max_samples, opts.measure.min_samples));
  if (!(opts.measure.min_time_s >= 0)) throw ConfigError(fmt::format("--min-time {}: expected seconds ≥ 0", opts.measure.min_time_s));
  HostMemory wanted_memory;
  if (opts.host_memory == "pinned") wanted_memory = HostMemory::pinned;
  else if (opts.host_memory == "pageable") wanted_memory = HostMemory::pageable;
  else throw ConfigError(fmt::format("--host-memory {}: expected pinned or pageable", opts.host_memory));

  Matrix mx = load_matrix(opts.config);
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

  std::vector<std::unique_ptr<Reporter>> reporters;
  if (!opts.isolated_child) reporters.push_back(make_screen_reporter(opts.quiet));
  MeasureOptions measure = opts.measure;
  measure.kill_after_max_time = opts.isolated_child;
  const std::string json_path =
      !opts.json_path.empty() ? opts.json_path : fmt::format("results/local/{}-{}.json", info.host.hostname, utc_now_compact());
  reporters.push_back(make_json_reporter(json_path));
  if (!opts.md_path.empty()) reporters.push_back(make_markdown_reporter(opts.md_path));
  if (!opts.csv_path.empty()) reporters.push_back(make_csv_reporter(opts.csv_path));

  install_signal_handlers();
  info.warmup_ms = warm_up_devices(info.devices);  // before any measurement, on every selected GPU at once
  for (auto& rep : reporters) rep->begin(info);

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
  for (const Case& original : cases) {
    if (stop_requested()) break;
    Case c = original;
    if (opts.seed) c.seed = *opts.seed;
    Result base;
    base.problem_case = c;

    if (opts.isolate) {  // the children generate the data and validate; the parent only collects
      for (const VersionDesc* v : versions) {
        if (stop_requested()) break;
        announce(c, *v);
        finish(run_isolated(opts, c, *v));
      }
      continue;
    }

    const std::size_t qf = std::size_t(c.m) * c.dim, rf = std::size_t(c.n) * c.dim, slots = std::size_t(c.m) * c.topk;
    const double need = 4.0 * double(qf + rf) + 8.0 * 2.0 * double(slots);
    const double have = double(available_host_memory());
    if (have > 0 && need > 0.9 * have) {
      for (const VersionDesc* v : versions) {
        Result r = base;
        r.version = v->id;
        r.title = v->title;
        r.family = to_string(v->family);
        r.status = Status::skip;
        r.reason = fmt::format("needs {} of host memory, host has {} available", gib(need), gib(have));
        announce(c, *v);
        finish(std::move(r));
      }
      continue;
    }

    HostArray queries(qf, info.host_memory), references(rf, info.host_memory);
    fill_points(mx, c, PointSet::queries, queries.data());
    fill_points(mx, c, PointSet::references, references.data());
    base.query_checksum = to_hex(checksum(queries.data(), qf));
    base.reference_checksum = to_hex(checksum(references.data(), rf));
    const Problem p{c.dim, c.m, c.n, c.topk, queries.data(), references.data()};

    std::optional<Reference> reference;
    for (const VersionDesc* v : versions) {
      if (stop_requested()) break;
      if (measure.validate && !reference) {
        const bool will_run = !(v->gpus != GpuNeed::none && env.devices.empty()) && !(v->supports && v->supports(p, env));
        if (will_run) reference = compute_reference(p, measure.validate_queries);
      }
      announce(c, *v);
      Result r = base;
      measure_version(*v, p, env, measure, reference ? &*reference : nullptr, r);
      if (v->gpus != GpuNeed::none) trim_device_pools(env.devices);
      finish(std::move(r));
    }
  }
  info.complete = !stop_requested();
  for (auto& rep : reporters) rep->end(info, results);
  if (!opts.quiet && !opts.isolated_child) fmt::print("Results: {}\n", json_path);
  if (stop_requested()) {
    fmt::print(stderr, "knnbench: interrupted; {} finished results saved in {}\n", results.size(), json_path);
    return 128 + SIGINT;
  }
  return any_fail ? kExitValidationFailed : kExitOk;
}

}  // namespace knn
