#pragma once
// The rates of each selected GPU, measured once per process at start-up after the warm-up (GEMM
// rates, device memory, host copies: floor.hpp's DeviceRates), and the floor of a result from
// them (floor.hpp). A build without CUDA, a run without devices and --no-rates measure none; the
// results file says why (RunInfo::rates_note).
#include <string>
#include <vector>

#include "floor.hpp"
#include "result.hpp"

namespace knn {

struct RatesMeasurement {
  std::vector<DeviceRates> rates;  // per device, in the order given; empty when none were measured
  std::string note;                // why none were measured
};

// Measures the rates of each device in turn (the host copies of two devices would share the bus).
// `on` false (--no-rates): none. A CUDA error leaves the rates unmeasured, with the error in the note.
RatesMeasurement measure_device_rates(const std::vector<DeviceInfo>& devices, bool on, const std::string& device_note);

// The rates of the device `ordinal` among the run's devices; nullptr when not measured.
const DeviceRates* rates_of(const RunInfo& info, int ordinal);

// The floor of result `r` (its case, family, devices used, host memory, value traits and median)
// from the rates in `info`: decided for a timed result, not decided (no floor written) otherwise.
ResultFloor floor_of(const RunInfo& info, const Result& r);

namespace detail {
DeviceRates measure_rates_on(int device);  // rates.cu (CUDA builds only)
}

}  // namespace knn
