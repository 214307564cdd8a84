#pragma once
#include <cstddef>
#include <string>

namespace knn {

struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  int cores = 0;                    // logical CPUs
  std::size_t memory_bytes = 0;     // MemTotal
  std::size_t available_bytes = 0;  // MemAvailable at start
  int omp_threads = 1;
  std::string os;
  std::string omp_env;               // describe_omp_env(): OMP_PROC_BIND / OMP_PLACES and who set them
  double load_1min = -1, load_5min = -1, load_15min = -1;  // /proc/loadavg at start; -1 unknown
  std::string cpu_governor = "unknown";                   // cpu0's cpufreq scaling governor
};

HostInfo read_host_info();
// "0.52 0.58 0.59 1/467 12345" → the three load averages; false when it does not parse.
bool parse_loadavg(const std::string& text, double& one, double& five, double& fifteen);
// The first word of `path` (a sysfs file), or "unknown" when it cannot be read.
std::string read_first_word(const std::string& path);
// The machine was busy when the run started: the 1-minute load average is above the cores the
// OpenMP team leaves free, plus one.
bool host_busy(const HostInfo& h);
std::size_t available_host_memory();  // MemAvailable now, 0 when unknown
// What this process can still allocate: MemAvailable, lowered to what RLIMIT_AS (ulimit -v) leaves
// above the address space in use and to the cgroup's memory.max headroom; 0 when all unknown.
std::size_t usable_host_memory();
std::string utc_now_iso();            // 2026-11-21T19:30:00Z
std::string utc_now_compact();        // 20261121T193000Z

}  // namespace knn
