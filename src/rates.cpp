#include "rates.hpp"

#include <fmt/format.h>

#include <cmath>
#include <exception>

#include "devices.hpp"

namespace knn {

RatesMeasurement measure_device_rates(const std::vector<DeviceInfo>& devices, bool on, const std::string& device_note) {
  RatesMeasurement out;
#if !KNN_HAVE_CUDA
  (void)devices, (void)on, (void)device_note;
  out.note = "built without CUDA: no rates";
#else
  if (!on) {
    out.note = "not measured (--no-rates)";
  } else if (devices.empty()) {
    out.note = device_note.empty() ? "no device selected: no rates" : device_note + ": no rates";
  } else {
    try {
      for (const DeviceInfo& d : devices) out.rates.push_back(detail::measure_rates_on(d.ordinal));
    } catch (const std::exception& e) {
      out.rates.clear();
      out.note = fmt::format("not measured: {}", e.what());
    }
    trim_device_pools(devices);  // the GEMMs' buffers go back to the device
  }
#endif
  return out;
}

const DeviceRates* rates_of(const RunInfo& info, int ordinal) {
  for (std::size_t i = 0; i < info.devices.size() && i < info.device_rates.size(); ++i)
    if (info.devices[i].ordinal == ordinal && info.device_rates[i].measured()) return &info.device_rates[i];
  return nullptr;
}

ResultFloor floor_of(const RunInfo& info, const Result& r) {
  if (!timed(r.status)) return ResultFloor{};
  const Case& c = r.problem_case;
  FloorInput in;
  in.m = c.m, in.n = c.n, in.k = c.dim, in.topk = c.topk, in.self_join = c.self_join;
  in.family = r.family;
  in.memory = r.host_memory;
  in.values = r.values;
  in.median_ms = r.stats.median;
  for (const int d : r.devices_used) {
    if (const DeviceRates* rates = rates_of(info, d)) {
      in.rates.push_back(*rates);
    } else if (in.no_rates.empty()) {
      in.no_rates = fmt::format("no rates for device {} ({})", d, info.rates_note.empty() ? "not measured" : info.rates_note);
      in.rates.push_back(DeviceRates{});
    }
  }
  return compute_floor(in);
}

}  // namespace knn
