// The screen: a Devices block, one line per result (skips collapsed into one line per reason at
// the end), then the seeds' table with the fastest version of each case marked. Every line within
// kScreenWidth columns; colour and a progress line only on a terminal (terminal.hpp: under mpirun
// no progress line, and colour only when forced).
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "measure.hpp"
#include "report.hpp"
#include "terminal.hpp"

namespace knn {
namespace {

std::string case_label(const Case& c) {
  std::string data = c.distribution == Distribution::uniform ? "" : std::string(" ") + to_string(c.distribution);
  if (c.self_join) data += " self-join";
  if (!c.queries_file.empty()) data += " queries=" + c.queries_file;
  if (!c.references_file.empty()) data += " references=" + c.references_file;
  return fmt::format("case {} (k={} m={} n={} topk={}{})", c.id, c.dim, c.m, c.n, c.topk, data);
}

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s, 3600) / 60);
}

std::vector<std::string> split_remarks(const std::string& remarks) {
  std::vector<std::string> parts;
  for (std::size_t start = 0; start < remarks.size();) {
    const std::size_t end = std::min(remarks.find("; ", start), remarks.size());
    parts.push_back(remarks.substr(start, end - start));
    start = end + 2;
  }
  return parts;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// One line per (reason, set of cases): "Skipped v1–v9, v11, v13 on every case: no CUDA device".
std::string skip_summary(const std::vector<Result>& all) {
  std::vector<int> every;
  for (const auto& r : all)
    if (std::find(every.begin(), every.end(), r.problem_case.id) == every.end()) every.push_back(r.problem_case.id);
  std::map<std::string, std::map<std::string, std::vector<int>>> by_reason;  // reason -> version -> cases
  for (const auto& r : all)
    if (r.status == Status::skip) by_reason[r.reason + (r.interrupted ? " (interrupted)" : "")][r.label()].push_back(r.problem_case.id);
  std::string out;
  for (const auto& [reason, versions] : by_reason) {
    std::map<std::vector<int>, std::vector<std::string>> by_cases;
    for (const auto& [v, cases] : versions) by_cases[cases].push_back(v);
    for (auto& [cases, ids] : by_cases) {
      std::sort(ids.begin(), ids.end(), version_less);
      std::vector<int> sorted = cases;
      std::sort(sorted.begin(), sorted.end());
      const std::string where = cases.size() == every.size() ? (every.size() == 1 ? fmt::format("case {}", cases[0]) : "every case")
                                : sorted.size() == 1 ? fmt::format("case {}", sorted[0])
                                                     : "cases " + id_runs(sorted);
      out += wrap(fmt::format("Skipped {} on {}: {}", version_runs(ids), where, reason), kScreenWidth, 6);
    }
  }
  return out;
}

class ScreenReporter final : public Reporter {
 public:
  explicit ScreenReporter(bool quiet)
      : quiet_(quiet), tty_(progress_wanted(STDOUT_FILENO)), colour_(colour_wanted(STDOUT_FILENO)) {
    if (tty_ && !quiet_) ticker_ = std::thread([this] { tick(); });
  }
  ~ScreenReporter() override {
    done_ = true;
    if (ticker_.joinable()) ticker_.join();
  }

  // On a terminal, one progress line (case i/N, version, elapsed, ETA) rewritten in place; piped
  // output gets a "[i/N]" prefix on each result line instead, so logs stay clean.
  void start(const RunInfo&, const Case& c, const std::string& version, int index, int total) override {
    if (quiet_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (index == 0) t0_ = std::chrono::steady_clock::now();
    index_ = index;
    total_ = total;
    header(c);
    what_ = fmt::format("case {} {}", c.id, version);
    item_start_ = std::chrono::steady_clock::now();
    measuring_ = true;
    progress();
  }

  void step(const Case& c, const std::string& what) override {
    if (quiet_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    header(c);
    what_ = fmt::format("case {}: {}", c.id, what);
    item_start_ = std::chrono::steady_clock::now();
    measuring_ = false;
    progress();
  }

  void begin(const RunInfo& info) override {
    if (quiet_) return;
    print_wrapped(fmt::format("knnbench: matrix {}", info.matrix_file));
    print_wrapped(fmt::format("Host: {} | {} | {} cores | {:.1f} GiB | {} OpenMP threads", info.host.hostname, info.host.cpu_model,
                              info.host.cores, info.host.memory_bytes / 1073741824.0, info.host.omp_threads));
    // Pinned inputs need a CUDA context: without a device they are pageable, and the line says why.
    print_wrapped("Host memory: " + host_memory_text(info));
    fmt::print("Devices:\n");
    if (info.devices.empty()) print_wrapped(fmt::format("  none ({})", info.device_note));
    for (std::size_t i = 0; i < info.devices.size(); ++i) {
      const auto& d = info.devices[i];
      print_wrapped(fmt::format("  [{}] {} | sm_{}{} | {} SMs | {:.1f} GiB | SM {} MHz, memory {} MHz x {} bit ({:.0f} GB/s) | warm-up {:.1f} ms",
                                d.ordinal, d.name, d.cc_major, d.cc_minor, d.sm_count, d.total_memory / 1073741824.0, d.clock_khz / 1000,
                                d.memory_clock_khz / 1000, d.memory_bus_bits, d.memory_bandwidth_gbs,
                                i < info.warmup_ms.size() ? info.warmup_ms[i] : 0.0));
      print_wrapped("      " + rates_text(info, i));  // the start-up rates, for the floors
    }
    std::fflush(stdout);
  }

  void result(const RunInfo&, const std::vector<Result>& all) override {
    if (quiet_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    measuring_ = false;
    const Result& r = all.back();
    if (r.status == Status::skip) {  // collapsed into one line per reason at the end
      ++skipped_;
      return;
    }
    ++ran_;
    if (tty_) fmt::print("\r\033[K");
    const std::string head = fmt::format("{}case {:>2} {:<4}", tty_ ? "" : fmt::format("[{}/{}] ", index_ + 1, total_), r.problem_case.id, r.label());
    std::string line;
    if (r.status == Status::fail) {
      line = fmt::format("{} {} {}{}", paint("Fail:", Colour::red, colour_), head, r.reason, r.interrupted ? " (interrupted)" : "");
    } else {
      std::string phases;
      if (r.phase_samples_ms.count("build"))
        phases = fmt::format(" build {}, query {}", format_ms(phase_median(r, "build")), format_ms(phase_median(r, "query")));
      const std::string finer = version_phases_text(r);
      if (!finer.empty()) phases += (phases.empty() ? " " : "; ") + finer;
      std::string tail;
      if (r.status == Status::inexact) tail += " (" + inexact_text(r) + "; first: " + r.validation.first_problem + ")";
      else if (!r.validated) tail += " (not validated)";
      else if (r.validation.ties_accepted) tail += fmt::format(" ({} ties accepted)", r.validation.ties_accepted);
      // A ground truth other than v0 on every query names itself and, when sampled, the count.
      if (const std::string truth = ground_truth_remark(r); !truth.empty()) tail += " (validated against " + truth + ")";
      else if (r.validated && r.validation.queries_checked < r.problem_case.m)
        tail += fmt::format(" (validated {} of {} queries)", r.validation.queries_checked, r.problem_case.m);
      if (!r.path.empty()) tail += " path: " + r.path;
      if (!r.note.empty()) tail += " note: " + r.note;
      // A remark the note already makes ("N calls per sample") is not said twice on one line.
      std::string remarks;
      for (const auto& part : split_remarks(result_remarks(r)))
        if (r.note.find(part) == std::string::npos) remarks += (remarks.empty() ? "" : "; ") + part;
      if (!remarks.empty()) tail += " (" + remarks + ")";
      const std::string word = r.status == Status::inexact ? paint("Inexact:", Colour::yellow, colour_) : std::string("Pass:");
      line = fmt::format("{} {} {:>10} ms ±{}% n={}{}{}", word, head, format_ms(r.stats.median), format_noise_pct(r.stats.median_noise_pct),
                         r.stats.samples, phases.empty() ? "" : " [" + phases.substr(1) + "]", tail);
    }
    print_wrapped(line);
    std::fflush(stdout);
  }

  void end(const RunInfo& info, const std::vector<Result>& all) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    if (ticker_.joinable()) ticker_.join();
    if (tty_ && !quiet_) fmt::print("\r\033[K");
    int pass = 0, fail = 0, skip = 0, inexact = 0;
    for (const auto& r : all)
      (r.status == Status::pass ? pass : r.status == Status::fail ? fail : r.status == Status::inexact ? inexact : skip)++;
    if (!quiet_) fmt::print("{}", skip_summary(all));
    fmt::print("\nMedian wall time per call (ms); rows are versions, columns are cases:\n");
    auto table = summary_table(all);
    const std::vector<std::string> fastest = mark_fastest(all, table);
    if (std::vector<std::string> floors = floor_row(all, table.empty() ? std::vector<std::string>{} : table[0]); !floors.empty())
      table.push_back(std::move(floors));
    std::string text = text_table_in_blocks(table, label_then_numbers(table.empty() ? 0 : table[0].size()), kScreenWidth);
    for (const auto& cell : fastest) text = paint_word(text, cell, Colour::green, colour_);
    text = paint_word(text, "FAIL", Colour::red, colour_);
    fmt::print("{}", text);
    if (!fastest.empty()) fmt::print("< = the fastest version of the case.\n");
    fmt::print("{}", wrap_lines(summary_legend(all) + floor_legend(all), kScreenWidth));
    // The canary's spread only when the host's speed changed during the run (report's markdown has it always).
    if (const std::string canary = canary_spread_text(info, all, false); canary.find("WARNING") != std::string::npos)
      fmt::print("\n{}", wrap_lines(canary, kScreenWidth));
    fmt::print("\n{} passed, {}{} failed, {} skipped\n", pass, inexact ? fmt::format("{} inexact (peers), ", inexact) : "", fail, skip);
    std::fflush(stdout);
  }

 private:
  void print_wrapped(const std::string& line) { fmt::print("{}", wrap(line, kScreenWidth, 6)); }

  // The case's parameters once, before its first line (the result lines name only its id).
  void header(const Case& c) {
    if (c.id == header_case_ && started_) return;
    started_ = true;
    header_case_ = c.id;
    if (tty_) fmt::print("\r\033[K");
    print_wrapped(case_label(c));
  }

  // Skip-aware: skipped results take no time, so the time so far (data and references included)
  // is shared by the results that ran, and of the remaining ones the share that ran so far is
  // expected to run.
  std::string eta() const {
    if (ran_ == 0) return "?";
    const double share = double(ran_) / double(ran_ + skipped_);
    return duration(seconds_since(t0_) / ran_ * (total_ - index_) * share);
  }

  void progress() {
    if (!tty_) return;
    std::string line = fmt::format("[{}/{}] {}  elapsed {}  ETA {}", index_ + 1, total_, what_, duration(seconds_since(t0_)), eta());
    const double busy = seconds_since(item_start_);
    if (busy >= 3) line += fmt::format("  ({}{})", duration(busy), measuring_ && calls_made_now() > 0 ? fmt::format(", calls so far: {}", calls_made_now()) : "");
    if (display_width(line) > kScreenWidth - 1) line = line.substr(0, kScreenWidth - 1);
    fmt::print("\r\033[K{}", line);
    std::fflush(stdout);
  }

  // A call or a step longer than a few seconds: the progress line shows its time and calls so far.
  void tick() {
    while (!done_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::lock_guard<std::mutex> lock(mutex_);
      if (!done_.load() && !what_.empty() && seconds_since(item_start_) >= 3 && seconds_since(last_tick_) >= 1) {
        progress();
        last_tick_ = std::chrono::steady_clock::now();
      }
    }
  }

  // Appends "<" to the fastest passing cell of each case column run by two or more versions;
  // returns the marked cells' texts (for colour).
  static std::vector<std::string> mark_fastest(const std::vector<Result>& all, TableRows& table) {
    std::map<int, const Result*> best;
    std::map<int, int> passing;
    for (const auto& r : all) {
      if (r.status != Status::pass || r.interrupted) continue;
      ++passing[r.problem_case.id];
      const Result*& b = best[r.problem_case.id];
      if (!b || r.stats.median < b->stats.median) b = &r;
    }
    std::vector<std::string> marked;
    if (table.empty()) return marked;
    for (std::size_t j = 1; j < table[0].size(); ++j) {
      const int id = std::stoi(table[0][j].substr(table[0][j].find(' ') + 1));  // "case 11"
      if (passing[id] < 2) continue;
      for (std::size_t i = 1; i < table.size(); ++i)
        if (table[i][0] == best[id]->version) {
          table[i][j] += "<";
          marked.push_back(table[i][j]);
        }
    }
    return marked;
  }

  bool quiet_, tty_, colour_;
  std::mutex mutex_;
  std::atomic<bool> done_{false};
  std::thread ticker_;
  std::string what_;
  bool measuring_ = false, started_ = false;
  int header_case_ = -1;
  int index_ = 0, total_ = 0, ran_ = 0, skipped_ = 0;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now(), item_start_ = t0_, last_tick_ = t0_;
};

}  // namespace

std::unique_ptr<Reporter> make_screen_reporter(bool quiet) { return std::make_unique<ScreenReporter>(quiet); }

}  // namespace knn
