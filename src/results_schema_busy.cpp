// The GPU busy time's fields in a results file: writer and strict reader (results_schema_busy.hpp).
#include "results_schema_busy.hpp"

#include <fmt/format.h>

#include <cmath>

namespace knn {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

ojson gpu_busy_to_json(const ResultGpuBusy& b) {
  if (!b.decided) return nullptr;
  if (!b.note.empty()) return {{"busy_ms", nullptr}, {"span_ms", nullptr}, {"note", b.note}};
  return {{"busy_ms", b.busy_ms}, {"span_ms", b.span_ms}, {"note", nullptr}};
}

void read_result_gpu_busy(const json& j, const std::string& w, Result& r, const SchemaFail& fail) {
  const auto it = j.find("gpu_busy");
  if (it == j.end() || it->is_null()) return;
  const std::string bw = w + ".gpu_busy";
  const json& b = *it;
  if (!b.is_object()) fail(bw, fmt::format("{}, expected an object or null", shown_json(b)));
  refuse_unknown_fields(b, bw, {"busy_ms", "span_ms", "note"}, fail);
  if (!timed(r.status)) fail(bw, fmt::format("on a {} result (only a result with a time has one)", to_string(r.status)));
  if (r.devices_used.empty()) fail(bw, "on a result that used no GPU (devices_used is empty)");
  if (!b.contains("note")) fail(bw + ".note", "missing, expected a text or null");
  ResultGpuBusy out;
  out.decided = true;
  const json note = b.value("note", json());
  if (!note.is_null()) {
    if (!note.is_string() || note.get<std::string>().empty()) fail(bw + ".note", fmt::format("{}, expected a text or null", shown_json(note)));
    for (const char* key : {"busy_ms", "span_ms"})
      if (b.contains(key) && !b[key].is_null())
        fail(bw + "." + key, fmt::format("{}, but the note says the call was not traced: expected null", shown_json(b[key])));
    out.note = note.get<std::string>();
    r.gpu_busy = out;
    return;
  }
  const auto number = [&](const char* key, bool zero_ok) {
    const json v = b.value(key, json());
    const bool ok = v.is_number() && std::isfinite(v.get<double>()) && (zero_ok ? v.get<double>() >= 0 : v.get<double>() > 0);
    if (!ok) fail(bw + "." + key, fmt::format("{}, expected a finite number {} (or a note saying why there is none)", shown_json(v), zero_ok ? ">= 0" : "> 0"));
    return v.get<double>();
  };
  out.busy_ms = number("busy_ms", true);
  out.span_ms = number("span_ms", false);
  if (out.busy_ms > out.span_ms * (1 + 1e-9))
    fail(bw + ".busy_ms", fmt::format("{}, over span_ms {} (the busy time lies inside the traced call)", out.busy_ms, out.span_ms));
  r.gpu_busy = out;
}

}  // namespace knn
