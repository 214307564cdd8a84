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
};

HostInfo read_host_info();
std::size_t available_host_memory();  // MemAvailable now, 0 when unknown
std::string utc_now_iso();            // 2026-11-21T19:30:00Z
std::string utc_now_compact();        // 20261121T193000Z

}  // namespace knn
