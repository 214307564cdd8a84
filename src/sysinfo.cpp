#include "sysinfo.hpp"

#include <omp.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

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
  return h;
}

std::string utc_now_iso() { return utc_format("%Y-%m-%dT%H:%M:%SZ"); }
std::string utc_now_compact() { return utc_format("%Y%m%dT%H%M%SZ"); }

}  // namespace knn
