#include "clocks.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cmath>
#include <mutex>

namespace knn {
namespace {

// The few NVML entry points used, by their C signatures (nvml.h is not needed to build).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;

struct Nvml {
  bool ok = false;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
};

template <class F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

// Loaded once and kept for the life of the process (never dlclose'd: NVML keeps threads).
const Nvml& nvml() {
  static Nvml n;
  static std::once_flag once;
  std::call_once(once, [] {
    void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    auto init = symbol<nvmlReturn_t (*)()>(lib, "nvmlInit_v2");
    n.by_pci = symbol<decltype(n.by_pci)>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    n.clock = symbol<decltype(n.clock)>(lib, "nvmlDeviceGetClockInfo");
    // Renamed "clocks event reasons" in recent drivers; the old name stays exported.
    n.reasons = symbol<decltype(n.reasons)>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!n.reasons) n.reasons = symbol<decltype(n.reasons)>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    n.ok = init && n.by_pci && n.clock && n.reasons && init() == kNvmlSuccess;
  });
  return n;
}

}  // namespace

ClockReading read_clock(const DeviceInfo& device) {
  ClockReading r;
  const Nvml& n = nvml();
  if (!n.ok || device.pci_bus_id.empty()) return r;
  nvmlDevice_t handle = nullptr;
  unsigned mhz = 0;
  unsigned long long reasons = 0;
  if (n.by_pci(device.pci_bus_id.c_str(), &handle) != kNvmlSuccess) return r;
  if (n.clock(handle, kNvmlClockSm, &mhz) != kNvmlSuccess || n.reasons(handle, &reasons) != kNvmlSuccess) return r;
  r.recorded = true;
  r.sm_mhz = mhz;
  r.throttle = reasons;
  return r;
}

std::string throttle_names(std::uint64_t reasons) {
  static const std::pair<std::uint64_t, const char*> kNames[] = {
      {0x1, "gpu_idle"},           {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},        {0x10, "sync_boost"},         {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake"},   {0x100, "display_clock"}};
  if (reasons == 0) return "none";
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(reasons & bit)) continue;
    out += (out.empty() ? "" : ", ") + std::string(name);
    reasons &= ~bit;
  }
  if (reasons) out += (out.empty() ? "" : ", ") + fmt::format("0x{:x}", reasons);
  return out;
}

std::string clock_warning(const ClockRecord& c) {
  if (!c.before.recorded || !c.after.recorded) return "";
  std::string why;
  if (c.before.sm_mhz > 0 && std::abs(double(c.after.sm_mhz) - double(c.before.sm_mhz)) > 0.05 * double(c.before.sm_mhz))
    why = fmt::format("SM clock {} → {} MHz", c.before.sm_mhz, c.after.sm_mhz);
  const std::uint64_t appeared = c.after.throttle & ~c.before.throttle & ~throttle::gpu_idle;
  if (appeared) why += (why.empty() ? "" : ", ") + fmt::format("throttled: {}", throttle_names(appeared));
  return why.empty() ? "" : fmt::format("GPU {}: {}", c.device, why);
}

}  // namespace knn
