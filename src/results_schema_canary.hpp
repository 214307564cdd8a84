#pragma once
// The canary's fields in a results file (canary.hpp): each result's "canary" {cpu_ms_before,
// cpu_ms_after, mem_gbps_before, mem_gbps_after} and "host_facts" {input_numa_node,
// input_anon_huge_kb, cpus, cpu_mhz}, and the file's "host_facts" {affinity, numa_nodes,
// transparent_hugepages, cpufreq}. Files without them (--no-canary, older files) read as not recorded.
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "result.hpp"

namespace knn {

// Writers: null when not recorded.
nlohmann::ordered_json canary_to_json(const ResultCanary& c);
nlohmann::ordered_json result_host_facts_to_json(const ResultHostFacts& f);
nlohmann::ordered_json host_facts_to_json(const HostFacts& f);

// Reads a result's "canary" and "host_facts" (`j` is the result, `where` its name, "results[3]")
// into r; `fail(field, what)` throws the reader's error naming the file, the field and the value.
// A canary's four numbers must be finite and > 0; a field of another type, or an unknown one, is
// refused.
using SchemaFail = std::function<void(const std::string& where, const std::string& what)>;
// Refuses the first field of the object `obj` that is not in `known`: fail(where.KEY, "unknown field
// (a knnbench result has here: ...)"). Every strict reader of a results file uses it.
// A value as a reader's message shows it: its JSON, cut after 60 characters.
std::string shown_json(const nlohmann::json& v);
void refuse_unknown_fields(const nlohmann::json& obj, const std::string& where, std::initializer_list<const char*> known,
                           const SchemaFail& fail);
void read_result_canary(const nlohmann::json& j, const std::string& where, Result& r, const SchemaFail& fail);

// The file's "host_facts": checked (SchemaError naming `file` and the field) and read.
void check_host_facts(const nlohmann::json& doc, const std::string& file);
void read_host_facts(const nlohmann::json& doc, RunInfo& info);

}  // namespace knn
