#include "isolate.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/errors.hpp"
#include "output_file.hpp"
#include "report.hpp"
#include "results_journal.hpp"

namespace knn {
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

// Removes its file (and the journal a child writes beside a results file) when the parent is done
// with it, on every path out.
struct TempFile {
  std::string path;
  explicit TempFile(std::string p) : path(std::move(p)) { clear(); }
  ~TempFile() { clear(); }
  void clear() const {
    std::remove(path.c_str());
    std::remove((path + ".journal").c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

struct ChildExit {
  int status = 0;          // as waitpid reports it
  bool killed_by_us = false;
  std::string stderr_text; // its last 64 KiB
  pid_t pid = 0;
};

// Starts `knnbench --isolated-child options_file` (this same binary), collects its stderr, and
// kills it at `deadline`.
ChildExit run_child(const std::string& options_file, std::chrono::steady_clock::time_point deadline) {
  std::vector<std::string> args{"knnbench", "--isolated-child", options_file};
  int err_pipe[2];
  if (::pipe(err_pipe) != 0) throw std::runtime_error("--isolate: pipe() failed");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("--isolate: fork() failed");
  if (pid == 0) {
    // The child dies with the parent (a SIGKILLed parent must not leave it running); a parent that
    // died before this line is caught by the getppid() check.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) std::_Exit(127);
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
  ChildExit out;
  for (;;) {
    pollfd pfd{err_pipe[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 200);
    if (ready > 0) {
      char buf[4096];
      const ssize_t got = ::read(err_pipe[0], buf, sizeof buf);
      if (got <= 0) break;
      out.stderr_text.append(buf, std::size_t(got));
      if (out.stderr_text.size() > 65536) out.stderr_text.erase(0, out.stderr_text.size() - 65536);
    }
    if (std::chrono::steady_clock::now() > deadline && !out.killed_by_us) {
      ::kill(pid, SIGKILL);
      out.killed_by_us = true;
    }
  }
  ::close(err_pipe[0]);
  while (::waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
  }
  out.pid = pid;
  return out;
}

// Why the child left no result: its time-out, signal or exit code, and its last line on stderr.
std::string failure_reason(const ChildExit& child, double max_time_s) {
  std::string reason;
  if (child.killed_by_us) {
    reason = "child process did not finish in time and was killed";
  } else if (WIFSIGNALED(child.status)) {
    reason = fmt::format("child process killed by {}", signal_name(WTERMSIG(child.status)));
  } else if (WIFEXITED(child.status) && WEXITSTATUS(child.status) == 124) {
    reason = fmt::format("stopped: a call exceeded --max-time {} s", max_time_s);
  } else {
    reason = fmt::format("child process exited with code {}", WIFEXITED(child.status) ? WEXITSTATUS(child.status) : -1);
  }
  const std::string tail = last_line(child.stderr_text);
  if (!tail.empty()) reason += ": " + tail;
  return reason;
}

}  // namespace

int remove_stale_isolate_files() {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  const fs::path folder = fs::temp_directory_path(ec);
  if (ec) return 0;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("knnbench-", 0) != 0) continue;
    const auto dash = name.find('-', 9);
    const std::string pid = name.substr(9, dash == std::string::npos ? std::string::npos : dash - 9);
    if (dash == std::string::npos || pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid()) continue;
    if (process_alive(std::stol(pid))) continue;
    if (::unlink(it->path().c_str()) == 0) ++removed;
  }
  return removed;
}

RunOptions child_options(const RunOptions& opts, int case_id, const PlanItem& item, const std::string& json_path) {
  RunOptions o = opts;
  o.case_specs = {std::to_string(case_id)};
  o.groups.clear();
  o.version_specs = {item.version->id};
  o.param_specs.clear();  // the item's own values, one each: the child runs this variant alone
  for (const std::string& name : item.params.set_names()) o.param_specs.push_back(item.version->id + "." + name + "=" + item.params.text(name));
  o.ignore_matrix_params = true;
  o.json_path = json_path;
  o.md_path.clear();
  o.csv_path.clear();
  o.list = false;
  o.isolate = false;
  o.isolated_child = true;
  return o;
}

RunOptions read_child_options(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("--isolated-child {}: cannot open the options file", path));
  try {
    return nlohmann::json::parse(in).get<RunOptions>();
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(fmt::format("--isolated-child {}: not a knnbench options file: {}", path, e.what()));
  }
}

Result run_isolated(const RunOptions& opts, const Case& c, const PlanItem& item) {
  const VersionDesc& v = *item.version;
  Result r;
  r.problem_case = c;
  r.version = v.id;
  r.title = v.title;
  r.family = to_string(v.family);
  r.params = item.params.values();
  r.params_set = item.params.set_names();
  const auto stem = std::filesystem::temp_directory_path() / fmt::format("knnbench-{}-case{}-{}", ::getpid(), c.id, v.id);
  const TempFile results(stem.string() + ".json"), options(stem.string() + "-options.json");
  {
    std::ofstream out(options.path);
    out << nlohmann::json(child_options(opts, c.id, item, results.path)).dump();
    if (!out) throw std::runtime_error(fmt::format("--isolate: cannot write {}", options.path));
  }
  // The backstop deadline covers data generation and the reference too.
  const MeasureOptions& m = opts.measure;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                             std::chrono::duration<double>(3 * m.max_time_s * (m.warmup + 1) + 600));
  const ChildExit child = run_child(options.path, deadline);
  // A child killed mid-write leaves its temporary (<results>.tmp.<child pid>).
  std::remove(fmt::format("{}.tmp.{}", results.path, child.pid).c_str());

  std::ifstream in(results.path);
  if (in) {
    try {
      auto doc = nlohmann::json::parse(in);
      merge_journal(results.path, doc);  // a child that died after its result: the journal has it
      if (doc.at("results").size() == 1) return result_from_json(doc.at("results")[0]);
    } catch (const std::exception&) {
      // fall through: recorded as a failure below
    }
  }
  r.status = Status::fail;
  r.reason = failure_reason(child, m.max_time_s);
  return r;
}

}  // namespace knn
