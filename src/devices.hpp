#pragma once
// CUDA device discovery and warm-up. No GPU is a normal state: no device, no driver and a
// build without CUDA all give an empty list and a one-line note.
#include <string>
#include <vector>

#include "core/environment.hpp"

namespace knn {

struct DeviceDiscovery {
  std::vector<DeviceInfo> devices;
  std::string note;            // why the list is empty, when it is
  int runtime_version = 0;     // CUDA runtime (e.g. 13000), 0 without CUDA
  int driver_version = 0;      // CUDA driver API version, 0 without a driver
};

DeviceDiscovery discover_devices();

// Creates the context on every given device and runs a trivial kernel there, all devices at
// once (one host thread each). Returns the warm-up time per device in ms. Throws on a CUDA error.
std::vector<double> warm_up_devices(const std::vector<DeviceInfo>& devices);

// Free memory on a device now (bytes); 0 when unknown or without CUDA.
std::size_t device_free_memory(int ordinal);

// Returns the memory the devices' pools kept for reuse (between versions, so that free-memory
// checks see the whole device). Errors are ignored: a broken context is reported elsewhere.
void trim_device_pools(const std::vector<DeviceInfo>& devices);

namespace detail {
void run_warmup_kernel(int device);  // defined in warmup.cu (CUDA builds only)
void trim_pool(int device);
}

}  // namespace knn
