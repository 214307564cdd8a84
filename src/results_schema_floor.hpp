#pragma once
// The floor's fields in a results file (floor.hpp, rates.hpp): each device's "rates" {sgemm_tflops,
// tf32_tflops, int8_tops, d2d_gbps, h2d_pinned_gbps, h2d_pageable_gbps, d2h_pinned_gbps,
// d2h_pageable_gbps, ms} (null: not measured) and the file's "rates_note" (why none); each timed
// result's "floor" {floor_ms, x_floor, bound, rate_name, rate, copy_ms, compute_ms, note}. Files
// without them (older ones) read as no rates and no floor decided.
#include <nlohmann/json.hpp>
#include <string>

#include "result.hpp"
#include "results_schema_canary.hpp"  // SchemaFail

namespace knn {

// Writers: null when not measured (not decided).
nlohmann::ordered_json device_rates_to_json(const DeviceRates& r);
nlohmann::ordered_json floor_to_json(const ResultFloor& f);

// The header's rates: each devices[i].rates null or an object of every rate, each a finite number
// > 0 ("ms" too), no other field; SchemaError naming `file` and the field.
void check_device_rates(const nlohmann::json& doc, const std::string& file);
void read_device_rates(const nlohmann::json& doc, RunInfo& info);

// A result's "floor" into r.floor (`j` is the result, `where` its name; r's status and stats read
// first). Refused: an unknown field, a bound other than copy, compute or none, a number not finite
// and > 0, a floor_ms other than its bound's term (copy_ms or compute_ms, the larger), a rate_name
// that is not a rate of that bound, an x_floor other than median / floor_ms, a floor on a result
// without a time, a bound none with numbers or without the note saying why.
void read_result_floor(const nlohmann::json& j, const std::string& where, Result& r, const SchemaFail& fail);

}  // namespace knn
