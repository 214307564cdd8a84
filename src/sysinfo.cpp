#include "sysinfo.hpp"

#include <omp.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "omp_env.hpp"

namespace knn {
namespace {
std::size_t meminfo_kb(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string k;
  std::size_t v = 0;
  std::string unit;
  while (in >> k >> v >> unit)
    if (k == key + ":") return v;
  return 0;
}
std::string utc_format(const char* fmt) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}
}  // namespace

std::size_t available_host_memory() { return meminfo_kb("MemAvailable") * 1024; }

std::size_t usable_host_memory() {
  std::size_t have = available_host_memory();
  const auto lower = [&](std::size_t limit) { have = have == 0 ? limit : std::min(have, limit); };
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::size_t pages = 0;  // the address space already in use
    std::ifstream("/proc/self/statm") >> pages;
    const std::size_t used = pages * std::size_t(::sysconf(_SC_PAGESIZE));
    lower(as.rlim_cur > used ? std::size_t(as.rlim_cur) - used : 0);
  }
  std::string max;
  std::size_t current = 0;
  if ((std::ifstream("/sys/fs/cgroup/memory.max") >> max) && max != "max" && (std::ifstream("/sys/fs/cgroup/memory.current") >> current)) {
    const std::size_t limit = std::stoull(max);
    lower(limit > current ? limit - current : 0);
  }
  return have;
}

HostInfo read_host_info() {
  HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) h.hostname = name;
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto c = line.find(':');
      if (c != std::string::npos) h.cpu_model = line.substr(c + 2);
      break;
    }
  }
  h.cores = int(std::thread::hardware_concurrency());
  h.memory_bytes = meminfo_kb("MemTotal") * 1024;
  h.available_bytes = available_host_memory();
  h.omp_threads = omp_get_max_threads();
  utsname u{};
  if (uname(&u) == 0) h.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  h.omp_env = describe_omp_env([](const char* n) { return std::getenv(n); }) + "; " + malloc_policy();
  std::ifstream load("/proc/loadavg");
  std::string text;
  if (std::getline(load, text) && !parse_loadavg(text, h.load_1min, h.load_5min, h.load_15min)) h.load_1min = h.load_5min = h.load_15min = -1;
  h.cpu_governor = read_first_word("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  return h;
}

bool parse_loadavg(const std::string& text, double& one, double& five, double& fifteen) {
  std::istringstream in(text);
  double a = 0, b = 0, c = 0;
  if (!(in >> a >> b >> c) || a < 0 || b < 0 || c < 0) return false;
  one = a;
  five = b;
  fifteen = c;
  return true;
}

std::string read_first_word(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  return (in >> word) ? word : "unknown";
}

bool host_busy(const HostInfo& h) { return h.load_1min > double(h.cores - h.omp_threads) + 1.0; }

std::string utc_now_iso() { return utc_format("%Y-%m-%dT%H:%M:%SZ"); }
std::string utc_now_compact() { return utc_format("%Y%m%dT%H%M%SZ"); }

}  // namespace knn
