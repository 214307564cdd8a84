// The screen: a Devices block, one tagged line per result, then the seeds' table.
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "report.hpp"
#include "text_table.hpp"

namespace knn {
namespace {

std::string case_label(const Case& c) {
  std::string data = c.distribution == Distribution::uniform ? "" : std::string(" ") + to_string(c.distribution);
  if (!c.queries_file.empty()) data += " queries=" + c.queries_file;
  if (!c.references_file.empty()) data += " references=" + c.references_file;
  return fmt::format("case {:>2} (k={} m={} n={} topk={}{})", c.id, c.dim, c.m, c.n, c.topk, data);
}

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s, 3600) / 60);
}

class ScreenReporter final : public Reporter {
 public:
  explicit ScreenReporter(bool quiet) : quiet_(quiet), tty_(::isatty(STDOUT_FILENO) == 1) {}

  // A one-line progress indicator on a terminal (case i/N, version, elapsed, ETA), rewritten in
  // place; piped output gets a "[i/N]" prefix on each result line instead, so logs stay clean.
  void start(const RunInfo&, const Case& c, const std::string& version, int index, int total) override {
    if (quiet_) return;
    if (index == 0) t0_ = std::chrono::steady_clock::now();
    index_ = index;
    total_ = total;
    if (!tty_) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const std::string eta = index > 0 ? duration(elapsed / index * (total - index)) : "?";
    fmt::print("\r\033[K[{}/{}] case {} {}  elapsed {}  ETA {}", index + 1, total, c.id, version, duration(elapsed), eta);
    std::fflush(stdout);
  }

  void begin(const RunInfo& info) override {
    if (quiet_) return;
    fmt::print("knnbench: matrix {} ({} host memory)\n", info.matrix_file, to_string(info.host_memory));
    fmt::print("Host: {} | {} | {} cores | {:.1f} GiB | {} OpenMP threads\n", info.host.hostname, info.host.cpu_model, info.host.cores,
               info.host.memory_bytes / 1073741824.0, info.host.omp_threads);
    fmt::print("Devices:\n");
    if (info.devices.empty()) fmt::print("  none ({})\n", info.device_note);
    for (std::size_t i = 0; i < info.devices.size(); ++i) {
      const auto& d = info.devices[i];
      fmt::print("  [{}] {} | sm_{}{} | {} SMs | {:.1f} GiB | SM {} MHz, memory {} MHz x {} bit ({:.0f} GB/s) | warm-up {:.1f} ms\n", d.ordinal,
                 d.name, d.cc_major, d.cc_minor, d.sm_count, d.total_memory / 1073741824.0, d.clock_khz / 1000, d.memory_clock_khz / 1000,
                 d.memory_bus_bits, d.memory_bandwidth_gbs, i < info.warmup_ms.size() ? info.warmup_ms[i] : 0.0);
    }
    std::fflush(stdout);
  }

  void result(const RunInfo&, const std::vector<Result>& all) override {
    if (quiet_) return;
    const Result& r = all.back();
    if (tty_) fmt::print("\r\033[K");
    const std::string head = fmt::format("{}{} {:<4}", tty_ ? "" : fmt::format("[{}/{}] ", index_ + 1, total_), case_label(r.problem_case), r.version);
    switch (r.status) {
      case Status::skip: fmt::print("Skip: {} {}{}\n", head, r.reason, r.interrupted ? " (interrupted)" : ""); break;
      case Status::fail: fmt::print("Fail: {} {}{}\n", head, r.reason, r.interrupted ? " (interrupted)" : ""); break;
      case Status::pass: {
        std::string phases;
        if (r.phase_samples_ms.count("build"))
          phases = fmt::format(" build {}, query {}", format_ms(phase_median(r, "build")), format_ms(phase_median(r, "query")));
        const std::string finer = version_phases_text(r);
        if (!finer.empty()) phases += (phases.empty() ? " " : "; ") + finer;
        std::string tail;
        if (!r.validated) tail += " (not validated)";
        else if (r.validation.ties_accepted) tail += fmt::format(" ({} ties accepted)", r.validation.ties_accepted);
        if (r.validated && r.validation.queries_checked < r.problem_case.m)
          tail += fmt::format(" (validated {} of {} queries)", r.validation.queries_checked, r.problem_case.m);
        if (!r.path.empty()) tail += " path: " + r.path;
        if (!r.note.empty()) tail += " note: " + r.note;
        const std::string remarks = result_remarks(r);
        if (!remarks.empty()) tail += " (" + remarks + ")";
        fmt::print("Pass: {} {:>10} ms ±{}% n={}{}{}\n", head, format_ms(r.stats.median), format_noise_pct(r.stats.median_noise_pct), r.stats.samples,
                   phases.empty() ? "" : " [" + phases.substr(1) + "]", tail);
        break;
      }
    }
    std::fflush(stdout);
  }

  void end(const RunInfo&, const std::vector<Result>& all) override {
    if (tty_ && !quiet_) fmt::print("\r\033[K");
    int pass = 0, fail = 0, skip = 0;
    for (const auto& r : all) (r.status == Status::pass ? pass : r.status == Status::fail ? fail : skip)++;
    fmt::print("\nMedian wall time per call (ms); rows are versions, columns are cases:\n");
    const auto table = summary_table(all);
    fmt::print("{}", text_table(table, label_then_numbers(table.empty() ? 0 : table[0].size())));
    fmt::print("{}", summary_legend(all));
    fmt::print("\n{} passed, {} failed, {} skipped\n", pass, fail, skip);
    std::fflush(stdout);
  }

 private:
  bool quiet_;
  bool tty_;
  int index_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace

std::unique_ptr<Reporter> make_screen_reporter(bool quiet) { return std::make_unique<ScreenReporter>(quiet); }

}  // namespace knn
