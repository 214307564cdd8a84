// The results schema's reader of a file: its bytes (results_schema_input.cpp: a regular file,
// plain or gzipped, capped), the journal of a killed run, schema_version and meta.tool, the header
// (each field checked by results_schema_header.cpp; a missing one reads as empty), and then every
// result through the strict reader of one result (results_schema_read.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "results_journal.hpp"
#include "results_schema.hpp"
#include "results_schema_canary.hpp"
#include "results_schema_floor.hpp"

namespace knn {

using json = nlohmann::json;

namespace {

const json& sub(const json& obj, const char* key) {
  static const json empty = json::object();
  if (!obj.is_object()) return empty;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

std::string str(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

template <class T>
T num(const json& obj, const char* key, T fallback = T{}) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<T>() : fallback;
}

bool flag(const json& obj, const char* key, bool fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// "13.0" → 13000, as the writer's version_string reverses; "" or odd → 0.
int cuda_version(const std::string& s) { int major = 0, minor = 0; return std::sscanf(s.c_str(), "%d.%d", &major, &minor) == 2 ? major * 1000 + minor * 10 : 0; }

DeviceInfo read_device(const json& d) {
  DeviceInfo di;
  di.ordinal = num<int>(d, "ordinal");
  di.name = str(d, "name");
  if (std::sscanf(str(d, "compute_capability").c_str(), "%d.%d", &di.cc_major, &di.cc_minor) != 2) di.cc_major = di.cc_minor = 0;
  di.sm_count = num<int>(d, "sm_count");
  di.total_memory = num<std::size_t>(d, "memory_bytes");
  di.clock_khz = num<int>(d, "clock_mhz") * 1000;
  di.memory_clock_khz = num<int>(d, "memory_clock_mhz") * 1000;
  di.memory_bus_bits = num<int>(d, "memory_bus_bits");
  di.memory_bandwidth_gbs = num<double>(d, "memory_bandwidth_gbs");
  di.l2_bytes = num<std::size_t>(d, "l2_bytes");
  di.pci_bus_id = str(d, "pci_bus_id");
  return di;
}

[[noreturn]] void bad_file(const std::string& file, const std::string& what) { throw SchemaError(fmt::format("{}: {}", file, what)); }

}  // namespace

RunInfo run_info_from_json(const json& j) {
  RunInfo info;
  const json& meta = sub(j, "meta");
  if (meta.contains("argv") && meta["argv"].is_array())
    for (const auto& a : meta["argv"])
      if (a.is_string()) info.argv.push_back(a.get<std::string>());
  info.recorded_build = {str(meta, "knnbench_version"), str(meta, "git_sha"),      str(meta, "build_type"),
                         str(meta, "cxx_compiler"),     str(meta, "cuda_compiler"), str(meta, "cuda_architectures")};
  info.cuda_runtime_version = cuda_version(str(meta, "cuda_runtime"));
  info.cuda_driver_version = cuda_version(str(meta, "cuda_driver"));
  info.started_utc = str(meta, "date_utc");
  info.complete = flag(meta, "complete", true);  // files from before the flag existed were complete
  read_host_facts(j, info);  // results_schema_canary.cpp
  const json& h = sub(j, "host");
  info.host.hostname = str(h, "hostname");
  info.host.cpu_model = str(h, "cpu_model");
  info.host.cores = num<int>(h, "cores");
  info.host.memory_bytes = num<std::size_t>(h, "memory_bytes");
  info.host.omp_threads = num<int>(h, "omp_threads");
  info.host.os = str(h, "os");
  info.host.omp_env = str(h, "omp_env");
  info.host.cpu_governor = h.is_object() && h.contains("cpu_governor") ? str(h, "cpu_governor") : "unknown";
  if (h.is_object() && h.contains("load_average") && h["load_average"].is_array() && h["load_average"].size() == 3) {
    const json& l = h["load_average"];
    if (l[0].is_number() && l[1].is_number() && l[2].is_number()) {
      info.host.load_1min = l[0].get<double>();
      info.host.load_5min = l[1].get<double>();
      info.host.load_15min = l[2].get<double>();
    }
  }
  if (j.is_object() && j.contains("devices") && j["devices"].is_array())
    for (const auto& d : j["devices"]) {
      info.devices.push_back(read_device(d));
      info.warmup_ms.push_back(num<double>(d, "warmup_ms"));
    }
  info.device_note = str(j, "device_note");
  read_device_rates(j, info);  // results_schema_floor.cpp
  read_mpi_json(j, info);  // under mpirun only
  info.matrix_file = str(sub(j, "matrix"), "file"), info.matrix_checksum = str(sub(j, "matrix"), "checksum");
  const json& o = sub(j, "options");
  info.warmup = num<int>(o, "warmup");
  info.min_samples = num<int>(o, "min_samples");
  info.max_samples = num<int>(o, "max_samples");
  info.min_time_s = num<double>(o, "min_time_s");
  info.max_time_s = num<double>(o, "max_time_s");
  info.max_noise_pct = o.is_object() && o.contains("max_noise_pct") ? num<double>(o, "max_noise_pct") : 0;
  info.validate = flag(o, "validate", true);
  info.validate_queries = num<int>(o, "validate_queries");
  info.host_memory = str(o, "host_memory") == "pinned" ? HostMemory::pinned : HostMemory::pageable;
  return info;
}

ResultsDocument read_results_document(const json& doc, const std::string& file, const std::vector<std::size_t>& journal_lines) {
  if (!doc.is_object()) bad_file(file, fmt::format("not a knnbench results file (the top level is {}, expected an object)", doc.type_name()));
  const auto sv = doc.find("schema_version");
  if (sv == doc.end()) bad_file(file, "no schema_version: not a knnbench results file");
  if (!sv->is_number_integer() || sv->get<long long>() < 1 || sv->get<long long>() > kResultsSchemaVersion)
    bad_file(file, fmt::format("schema_version {}, this knnbench reads 1 to {}", sv->dump(), kResultsSchemaVersion));
  const std::string tool = str(sub(doc, "meta"), "tool");
  if (!tool.empty() && tool != "knnbench") bad_file(file, fmt::format("meta.tool is \"{}\": not a knnbench results file", tool));
  const auto results = doc.find("results");
  if (results == doc.end()) bad_file(file, "(top level).results: missing");
  if (!results->is_array()) bad_file(file, fmt::format("results: expected an array, found {}", results->type_name()));
  check_header(doc, file);
  ResultsDocument out;
  out.file = file;
  out.info = run_info_from_json(doc);
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < results->size(); ++i) {
    // A result merged from the journal is named by the journal's line, where it can be found.
    const bool journal = i < journal_lines.size();
    const std::string source = journal ? journal_path(file) : file;
    const std::string where = journal ? fmt::format("line {}: result", journal_lines[i]) : fmt::format("results[{}]", i);
    out.results.push_back(result_from_json_at((*results)[i], source, where));
    labels.push_back(source + ": " + where);
  }
  check_results_agree(labels, out.results);
  return out;
}

ResultsDocument read_results_file(const std::string& path) {
  // Plain or gzipped JSON (results/**/*.json.gz), a regular file of at most kMaxInputBytes.
  const std::string text = read_input_file(path, "a knnbench results JSON file (or .json.gz)");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) bad_file(path, "empty file, expected a knnbench results JSON");
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    std::string what = e.what();
    const auto close = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
    if (what.rfind("[json.exception", 0) == 0 && close != std::string::npos) what = what.substr(close + 2);
    std::replace(what.begin(), what.end(), '\n', ' ');
    bad_file(path, "not valid JSON: " + what);
  }
  std::vector<std::size_t> journal_lines;
  merge_journal(path, doc, &journal_lines);
  return read_results_document(doc, path, journal_lines);
}

}  // namespace knn
