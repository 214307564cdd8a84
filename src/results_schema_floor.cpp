// The floor's fields in a results file: writer and strict reader (results_schema_floor.hpp).
#include "results_schema_floor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "results_schema.hpp"  // SchemaError, stat_agrees

namespace knn {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

ojson positive_or_null(double x) { return x > 0 ? ojson(x) : ojson(nullptr); }

// A finite number > 0 at obj[key]; absent or null: 0, unless required.
double positive(const json& obj, const char* key, const std::string& where, bool required, const SchemaFail& fail) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) fail(where + "." + key, "missing, expected a finite number > 0");
    return 0;
  }
  if (!it->is_number() || !std::isfinite(it->get<double>()) || !(it->get<double>() > 0))
    fail(where + "." + key, fmt::format("{}, expected a finite number > 0", it->dump()));
  return it->get<double>();
}

std::string text_at(const json& obj, const char* key, const std::string& where, const SchemaFail& fail) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  if (!it->is_string() || it->get<std::string>().empty()) fail(where + "." + key, fmt::format("{}, expected a text or null", it->dump()));
  const std::string s = it->get<std::string>();
  for (const char ch : s)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) fail(where + "." + key, "holds a control character (the tables print it raw)");
  return s;
}

void read_rates(const json& r, const std::string& w, DeviceRates& out, const SchemaFail& fail) {
  if (!r.is_object()) fail(w, fmt::format("{}, expected an object of rates or null", r.dump()));
  refuse_unknown_fields(r, w, {"sgemm_tflops", "tf32_tflops", "int8_tops", "d2d_gbps", "h2d_pinned_gbps", "h2d_pageable_gbps", "d2h_pinned_gbps",
                               "d2h_pageable_gbps", "fp16_tflops", "ms"},
                        fail);
  for (const char* name : kRateNames)
    *rate_named(out, name) = positive(r, name, w, std::string(name) != kOptionalRate, fail);
  out.ms = positive(r, "ms", w, true, fail);
}

}  // namespace

ojson device_rates_to_json(const DeviceRates& r) {
  if (!r.measured()) return nullptr;
  ojson j;
  for (const char* name : kRateNames) j[name] = positive_or_null(rate_named(r, name));
  j["ms"] = r.ms;
  return j;
}

ojson floor_to_json(const ResultFloor& f) {
  if (!f.decided) return nullptr;
  const bool has = f.has_floor();
  return {{"floor_ms", positive_or_null(has ? f.floor_ms : 0)},
          {"x_floor", positive_or_null(has ? f.x_floor : 0)},
          {"bound", to_string(f.bound)},
          {"rate_name", has ? ojson(f.rate_name) : ojson(nullptr)},
          {"rate", positive_or_null(has ? f.rate : 0)},
          {"copy_ms", positive_or_null(has ? f.copy_ms : 0)},
          {"compute_ms", positive_or_null(has ? f.compute_ms : 0)},
          {"note", f.note.empty() ? ojson(nullptr) : ojson(f.note)}};
}

void check_device_rates(const json& doc, const std::string& file) {
  if (!doc.is_object()) return;
  const SchemaFail fail = [&file](const std::string& where, const std::string& what) { throw SchemaError(fmt::format("{}: {}: {}", file, where, what)); };
  const auto devices = doc.find("devices");
  if (devices == doc.end() || !devices->is_array()) return;
  for (std::size_t i = 0; i < devices->size(); ++i) {
    const json& d = (*devices)[i];
    DeviceRates ignored;
    if (const auto r = d.is_object() ? d.find("rates") : d.end(); d.is_object() && r != d.end() && !r->is_null())
      read_rates(*r, fmt::format("devices[{}].rates", i), ignored, fail);
  }
}

void read_device_rates(const json& doc, RunInfo& info) {
  if (!doc.is_object()) return;
  if (const auto note = doc.find("rates_note"); note != doc.end() && note->is_string()) info.rates_note = note->get<std::string>();
  const auto devices = doc.find("devices");
  if (devices == doc.end() || !devices->is_array()) return;
  for (const json& d : *devices) {  // as the header's other fields: what check_device_rates accepts, else nothing
    DeviceRates rates;
    const auto r = d.is_object() ? d.find("rates") : d.end();
    if (d.is_object() && r != d.end() && r->is_object())
      for (const auto& [key, value] : r->items())
        if (double* field = key == "ms" ? &rates.ms : rate_named(rates, key); field && value.is_number()) *field = value.get<double>();
    info.device_rates.push_back(rates);
  }
}

void read_result_floor(const json& j, const std::string& w, Result& r, const SchemaFail& fail) {
  const auto it = j.find("floor");
  if (it == j.end() || it->is_null()) return;
  const std::string fw = w + ".floor";
  const json& f = *it;
  if (!f.is_object()) fail(fw, fmt::format("{}, expected an object or null", f.dump().substr(0, 60)));
  refuse_unknown_fields(f, fw, {"floor_ms", "x_floor", "bound", "rate_name", "rate", "copy_ms", "compute_ms", "note"}, fail);
  if (!timed(r.status)) fail(fw, fmt::format("a floor on a {} result (only a result with a time has one)", to_string(r.status)));
  ResultFloor out;
  out.decided = true;
  const std::string bound = text_at(f, "bound", fw, fail);
  out.note = text_at(f, "note", fw, fail);
  if (bound == "none") {
    for (const char* key : {"floor_ms", "x_floor", "rate_name", "rate", "copy_ms", "compute_ms"})
      if (f.contains(key) && !f[key].is_null()) fail(fw + "." + key, fmt::format("{}, but the bound is none (no floor): expected null", f[key].dump()));
    if (out.note.empty()) fail(fw + ".note", "missing, expected why there is no floor (bound none)");
    r.floor = out;
    return;
  }
  if (bound != "copy" && bound != "compute") fail(fw + ".bound", fmt::format("{}, expected copy, compute or none", f.value("bound", json()).dump()));
  out.bound = bound == "copy" ? FloorBound::copy : FloorBound::compute;
  out.floor_ms = positive(f, "floor_ms", fw, true, fail);
  out.copy_ms = positive(f, "copy_ms", fw, true, fail);
  out.compute_ms = positive(f, "compute_ms", fw, false, fail);
  out.rate = positive(f, "rate", fw, true, fail);
  out.x_floor = positive(f, "x_floor", fw, false, fail);
  out.rate_name = text_at(f, "rate_name", fw, fail);
  // The bound is the larger term, and floor_ms is it.
  const bool compute_larger = out.compute_ms > out.copy_ms;
  if (compute_larger != (out.bound == FloorBound::compute))
    fail(fw + ".bound", fmt::format("\"{}\", but copy_ms {} and compute_ms {} make the other the larger", bound, out.copy_ms, out.compute_ms));
  if (!stat_agrees(out.floor_ms, compute_larger ? out.compute_ms : out.copy_ms))
    fail(fw + ".floor_ms", fmt::format("{}, expected the larger of copy_ms and compute_ms ({})", out.floor_ms, std::max(out.copy_ms, out.compute_ms)));
  const bool copy_rate = out.rate_name == "h2d_pinned_gbps" || out.rate_name == "h2d_pageable_gbps";
  const bool compute_rate = out.rate_name == "int8_tops" || out.rate_name == "tf32_tflops" || out.rate_name == "fp16_tflops";
  if (out.bound == FloorBound::copy ? !copy_rate : !compute_rate)
    fail(fw + ".rate_name", fmt::format("{}, expected {}", json(out.rate_name).dump(),
                                        out.bound == FloorBound::copy ? "h2d_pinned_gbps or h2d_pageable_gbps (a copy bound)"
                                                                      : "int8_tops, fp16_tflops or tf32_tflops (a compute bound)"));
  if (std::isfinite(r.stats.median) && r.stats.median > 0 && !stat_agrees(out.x_floor, r.stats.median / out.floor_ms))
    fail(fw + ".x_floor", fmt::format("{}, but the median {} over floor_ms {} is {}", out.x_floor, r.stats.median, out.floor_ms, r.stats.median / out.floor_ms));
  r.floor = out;
}

}  // namespace knn
