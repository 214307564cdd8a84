#pragma once
// GPU clocks around each GPU result, as nvbench records them: the SM clock and the clock
// throttle reasons before the first timed call and after the last, read through NVML loaded at
// run time (dlopen "libnvidia-ml.so.1": no build dependency). Without NVML nothing is recorded,
// and that is never an error.
#include <cstdint>
#include <string>
#include <vector>

#include "core/environment.hpp"

namespace knn {

struct ClockReading {
  bool recorded = false;        // false: NVML absent, or it could not read this device
  unsigned sm_mhz = 0;          // current SM clock
  std::uint64_t throttle = 0;   // nvmlClocksThrottleReason* bits
};

struct ClockRecord {
  int device = -1;  // CUDA ordinal
  ClockReading before, after;
};

namespace throttle {
constexpr std::uint64_t gpu_idle = 0x1;  // nothing runs: the one reason that says nothing about a result
}

// Reads the SM clock and throttle reasons of `device` now (matched to NVML by PCI bus id).
ClockReading read_clock(const DeviceInfo& device);

// "sw_power_cap, hw_thermal_slowdown" (unknown bits as hex); "none" for 0.
std::string throttle_names(std::uint64_t reasons);

// Why this record makes a result doubtful, or "" when it does not: the SM clock moved by more than
// 5 %, or a throttle reason other than idle appeared between before and after. "" when either
// reading is missing.
std::string clock_warning(const ClockRecord& record);

}  // namespace knn
