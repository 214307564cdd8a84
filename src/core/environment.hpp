#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/params.hpp"

namespace knn {

// What the harness knows about one CUDA device; everything read from the device, never assumed.
struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t total_memory = 0;  // bytes
  std::size_t free_memory = 0;   // bytes, at discovery
  int clock_khz = 0;             // SM clock
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  double memory_bandwidth_gbs = 0;  // theoretical peak, from clock and bus width
  std::size_t l2_bytes = 0;
  std::size_t shared_per_block_optin = 0;
  int max_threads_per_block = 0;
  int max_texture2d_width = 0, max_texture2d_height = 0;
  int max_texture2d_linear_width = 0, max_texture2d_linear_height = 0, max_texture2d_linear_pitch = 0;
  std::size_t total_constant_memory = 0;
  std::string pci_bus_id;
};

enum class HostMemory { pinned, pageable };
inline const char* to_string(HostMemory h) { return h == HostMemory::pinned ? "pinned" : "pageable"; }

// The run's environment as versions see it.
struct Environment {
  std::vector<DeviceInfo> devices;  // the selected devices (--devices), in selection order
  HostMemory host_memory = HostMemory::pageable;
  int omp_threads = 1;
  // Under mpirun: this process's rank among `ranks`, and its rank among the ranks of its host
  // (which picks its GPU). One process without mpirun is rank 0 of 1. A version that shards the
  // references (VersionDesc::shards_references) talks to the other ranks itself, over MPI.
  int rank = 0, ranks = 1, local_rank = 0;
  // The values of the running version's declared parameters for this call (VersionDesc::params):
  // the harness gives each variant of a sweep its own copy.
  ParamValues params;
};

// The GPU a rank uses when it runs one: the ranks of a host take its selected GPUs in turn
// (more ranks than GPUs share them). None without a GPU.
inline const DeviceInfo* rank_device(const Environment& env) {
  return env.devices.empty() ? nullptr : &env.devices[std::size_t(env.local_rank) % env.devices.size()];
}

}  // namespace knn
