// The floors in the tables (floor.hpp): per case the fastest version's × floor, per result its
// floor and x_floor, per device its start-up rates.
#include <fmt/format.h>

#include <map>

#include "report.hpp"

namespace knn {

std::string floor_ms_text(const Result& r) {
  if (!r.floor.decided) return "";
  if (!r.floor.has_floor()) return "none";
  return fmt::format("{} ({})", format_ms(r.floor.floor_ms), to_string(r.floor.bound));
}

std::string x_floor_text(const Result& r) {
  if (!r.floor.has_floor() || !(r.floor.x_floor > 0)) return "";
  return fmt::format("{:.2f}", r.floor.x_floor);
}

std::string gpu_busy_text(const Result& r) {
  if (!r.gpu_busy.decided || !timed(r.status)) return "";
  if (!r.gpu_busy.measured()) return "-";
  const double share = gpu_busy_share(r.gpu_busy, r.stats.median);
  return fmt::format("{:.0f}{}", 100 * share, host_bound(r.gpu_busy, r.stats.median) ? " host-bound" : "");
}

std::vector<std::string> floor_row(const std::vector<Result>& results, const std::vector<std::string>& head) {
  std::map<int, const Result*> fastest;  // as the screen marks it: a pass, not interrupted, the least median
  bool any = false;
  for (const Result& r : results) {
    any = any || r.floor.has_floor();
    if (r.status != Status::pass || r.interrupted) continue;
    const Result*& b = fastest[r.problem_case.id];
    if (!b || r.stats.median < b->stats.median) b = &r;
  }
  if (!any || head.empty()) return {};
  std::vector<std::string> row{"× floor (fastest)"};
  for (std::size_t j = 1; j < head.size(); ++j) {
    const int id = std::stoi(head[j].substr(head[j].find(' ') + 1));  // "case 11"
    const auto it = fastest.find(id);
    const Result* r = it == fastest.end() ? nullptr : it->second;
    row.push_back(r && r->floor.has_floor() && r->floor.x_floor > 0 ? fmt::format("{:.2f} {}", r->floor.x_floor, to_string(r->floor.bound)) : "-");
  }
  return row;
}

std::string floor_legend(const std::vector<Result>& results) {
  for (const Result& r : results)
    if (r.floor.has_floor())
      return "× floor = the fastest version's median over its floor: the least time the call could take on the devices it used, "
             "the larger of the copy floor (inputs over the measured host-to-device rate, answers back) and the compute floor "
             "(2 m n k operations at the measured int8 or TF32 GEMM rate); copy or compute names the larger "
             "(docs/measurement.md, \"Floors\").\n";
  return "";
}

std::string rates_text(const RunInfo& info, std::size_t device) {
  if (device >= info.device_rates.size() || !info.device_rates[device].measured())
    return info.rates_note.empty() ? "rates not measured" : "rates " + info.rates_note;
  const DeviceRates& r = info.device_rates[device];
  const std::string gemms = r.fp16_tflops > 0 ? fmt::format("SGEMM {:.1f}, TF32 {:.1f}, fp16 {:.1f} TFLOP/s", r.sgemm_tflops, r.tf32_tflops, r.fp16_tflops)
                                               : fmt::format("SGEMM {:.1f}, TF32 {:.1f} TFLOP/s, fp16 not measured", r.sgemm_tflops, r.tf32_tflops);
  return fmt::format("rates: {}, int8 {:.1f} TOP/s; device copy {:.0f}, h2d {:.1f} pinned / {:.1f} pageable, d2h {:.1f} / {:.1f} GB/s", gemms,
                     r.int8_tops, r.d2d_gbps, r.h2d_pinned_gbps, r.h2d_pageable_gbps, r.d2h_pinned_gbps, r.d2h_pageable_gbps);
}

}  // namespace knn
