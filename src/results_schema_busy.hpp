#pragma once
// A GPU result's "gpu_busy" {busy_ms, span_ms, note} in a results file (gpu_busy.hpp): the busy and
// wall time of one traced call, or a note saying why it was not traced. Files without it (older
// ones, --no-gpu-busy, CPU results) read as not decided.
#include <nlohmann/json.hpp>
#include <string>

#include "result.hpp"
#include "results_schema_canary.hpp"  // SchemaFail

namespace knn {

// null when not decided.
nlohmann::ordered_json gpu_busy_to_json(const ResultGpuBusy& b);

// A result's "gpu_busy" into r.gpu_busy (`j` the result, `where` its name; r's status read first).
// Refused, naming the field and value: an unknown field; on a result without a time or without a
// GPU; a missing note, a note that is not a text or null, a note with numbers beside it; without a note, a busy_ms not finite and >= 0, a span_ms not
// finite and > 0, or a busy_ms over span_ms (the busy time is the union of intervals inside the span).
void read_result_gpu_busy(const nlohmann::json& j, const std::string& where, Result& r, const SchemaFail& fail);

}  // namespace knn
