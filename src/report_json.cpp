#include <fmt/format.h>

#include "build_info.hpp"
#include "report.hpp"

namespace knn {

using json = nlohmann::ordered_json;

namespace {

json phases_json(const std::map<std::string, std::vector<double>>& phases) {
  json out = json::object();
  for (const auto& [name, samples] : phases) {
    const Stats s = summarize(samples);
    out[name] = {{"median_ms", s.median}, {"min_ms", s.min}, {"max_ms", s.max}, {"samples", s.samples}, {"samples_ms", samples}};
  }
  return out;
}

std::string version_string(int v) { return v ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : ""; }

}  // namespace

json result_to_json(const Result& r) {
  const Case& c = r.problem_case;
  json j;
  j["case"] = {{"id", c.id},
               {"k", c.dim},
               {"m", c.m},
               {"n", c.n},
               {"topk", c.topk},
               {"distribution", to_string(c.distribution)},
               {"seed", c.seed},
               {"groups", c.groups},
               {"queries_file", c.queries_file.empty() ? json(nullptr) : json(c.queries_file)},
               {"references_file", c.references_file.empty() ? json(nullptr) : json(c.references_file)},
               {"checksums", {{"queries", r.query_checksum}, {"references", r.reference_checksum}}}};
  j["version"] = r.version;
  j["title"] = r.title;
  j["family"] = r.family;
  j["status"] = to_string(r.status);
  j["reason"] = r.reason.empty() ? json(nullptr) : json(r.reason);
  j["path"] = r.path.empty() ? json(nullptr) : json(r.path);
  j["note"] = r.note.empty() ? json(nullptr) : json(r.note);
  j["devices_used"] = r.devices_used;
  j["host_memory"] = to_string(r.host_memory);
  if (r.status == Status::skip) {
    j["validation"] = nullptr;
  } else if (!r.validated) {
    j["validation"] = {{"status", "off"}};
  } else {
    const auto& v = r.validation;
    j["validation"] = {{"status", v.pass ? "pass" : "fail"},
                       {"checked", v.checked},
                       {"queries_checked", v.queries_checked},
                       {"mismatches", v.mismatches},
                       {"ties_accepted", v.ties_accepted},
                       {"invalid", v.invalid},
                       {"max_rel_error", v.max_rel_error},
                       {"tolerance", {{"rtol", kDistanceRtol}, {"atol", kDistanceAtol}}},
                       {"first_problem", v.first_problem.empty() ? json(nullptr) : json(v.first_problem)}};
  }
  j["samples_ms"] = r.samples_ms;
  const Stats& s = r.stats;
  j["stats"] = {{"samples", s.samples}, {"median_ms", s.median}, {"min_ms", s.min}, {"max_ms", s.max},
                {"mean_ms", s.mean},     {"stdev_ms", s.stdev},   {"noise_pct", s.noise_pct}};
  j["phases"] = phases_json(r.phase_samples_ms);
  json dev = json::object();
  for (const auto& [d, phases] : r.device_phase_samples_ms) dev[std::to_string(d)] = phases_json(phases);
  j["device_phases"] = dev;
  return j;
}

Result result_from_json(const nlohmann::json& j) {
  Result r;
  const auto& c = j.at("case");
  r.problem_case.id = c.at("id");
  r.problem_case.dim = c.at("k");
  r.problem_case.m = c.at("m");
  r.problem_case.n = c.at("n");
  r.problem_case.topk = c.at("topk");
  parse_distribution(c.at("distribution").get<std::string>(), r.problem_case.distribution);
  r.problem_case.seed = c.at("seed");
  r.problem_case.groups = c.at("groups").get<std::vector<std::string>>();
  // Results written before data files existed have no such fields: generated data.
  for (auto [key, field] : {std::pair{"queries_file", &r.problem_case.queries_file}, std::pair{"references_file", &r.problem_case.references_file}})
    if (c.contains(key) && c[key].is_string()) *field = c[key].get<std::string>();
  r.query_checksum = c.at("checksums").at("queries");
  r.reference_checksum = c.at("checksums").at("references");
  r.version = j.at("version");
  r.title = j.at("title");
  r.family = j.at("family");
  const std::string st = j.at("status");
  r.status = st == "pass" ? Status::pass : st == "fail" ? Status::fail : Status::skip;
  auto opt_string = [&j](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string(); };
  r.reason = opt_string("reason");
  r.path = opt_string("path");
  r.note = opt_string("note");
  r.devices_used = j.at("devices_used").get<std::vector<int>>();
  r.host_memory = j.at("host_memory") == "pinned" ? HostMemory::pinned : HostMemory::pageable;
  const auto& v = j.at("validation");
  if (v.is_object() && v.at("status") != "off") {
    r.validated = true;
    r.validation.pass = v.at("status") == "pass";
    r.validation.checked = v.at("checked");
    r.validation.queries_checked = v.value("queries_checked", 0LL);
    r.validation.mismatches = v.at("mismatches");
    r.validation.ties_accepted = v.at("ties_accepted");
    r.validation.invalid = v.at("invalid");
    r.validation.max_rel_error = v.at("max_rel_error");
    if (v.at("first_problem").is_string()) r.validation.first_problem = v.at("first_problem");
  }
  r.samples_ms = j.at("samples_ms").get<std::vector<double>>();
  r.stats = summarize(r.samples_ms);
  for (const auto& [name, ph] : j.at("phases").items()) r.phase_samples_ms[name] = ph.at("samples_ms").get<std::vector<double>>();
  for (const auto& [dev, phases] : j.at("device_phases").items())
    for (const auto& [name, ph] : phases.items())
      r.device_phase_samples_ms[std::stoi(dev)][name] = ph.at("samples_ms").get<std::vector<double>>();
  return r;
}

RunInfo run_info_from_json(const nlohmann::json& j) {
  RunInfo info;
  const auto& meta = j.at("meta");
  info.argv = meta.at("argv").get<std::vector<std::string>>();
  info.started_utc = meta.at("date_utc");
  info.complete = meta.at("complete");
  const auto& h = j.at("host");
  info.host.hostname = h.at("hostname");
  info.host.cpu_model = h.at("cpu_model");
  info.host.cores = h.at("cores");
  info.host.memory_bytes = h.at("memory_bytes");
  info.host.omp_threads = h.at("omp_threads");
  info.host.os = h.value("os", "");
  for (const auto& d : j.at("devices")) {
    DeviceInfo di;
    di.ordinal = d.at("ordinal");
    di.name = d.at("name");
    const std::string cc = d.at("compute_capability");
    di.cc_major = std::stoi(cc.substr(0, cc.find('.')));
    di.cc_minor = std::stoi(cc.substr(cc.find('.') + 1));
    di.sm_count = d.at("sm_count");
    di.total_memory = d.at("memory_bytes");
    info.devices.push_back(di);
    info.warmup_ms.push_back(d.value("warmup_ms", 0.0));
  }
  if (j.at("device_note").is_string()) info.device_note = j.at("device_note");
  info.matrix_file = j.at("matrix").at("file");
  info.matrix_checksum = j.at("matrix").at("checksum");
  const auto& o = j.at("options");
  info.warmup = o.at("warmup");
  info.min_samples = o.at("min_samples");
  info.max_samples = o.value("max_samples", 0);
  info.min_time_s = o.at("min_time_s");
  info.max_time_s = o.at("max_time_s");
  info.validate = o.at("validate");
  info.validate_queries = o.value("validate_queries", 0);
  info.host_memory = o.at("host_memory") == "pinned" ? HostMemory::pinned : HostMemory::pageable;
  return info;
}

json results_to_json(const RunInfo& info, const std::vector<Result>& results) {
  json j;
  j["schema_version"] = kResultsSchemaVersion;
  j["meta"] = {{"tool", "knnbench"},
               {"knnbench_version", build_info::version},
               {"git_sha", build_info::git_sha},
               {"build_type", build_info::build_type},
               {"cxx_compiler", build_info::cxx_compiler},
               {"cuda_compiler", build_info::cuda_compiler},
               {"cuda_architectures", build_info::cuda_architectures},
               {"cuda_runtime", version_string(info.cuda_runtime_version)},
               {"cuda_driver", version_string(info.cuda_driver_version)},
               {"date_utc", info.started_utc},
               {"argv", info.argv},
               {"complete", info.complete}};
  j["host"] = {{"hostname", info.host.hostname},   {"cpu_model", info.host.cpu_model}, {"cores", info.host.cores},
               {"memory_bytes", info.host.memory_bytes}, {"omp_threads", info.host.omp_threads}, {"os", info.host.os}};
  json devs = json::array();
  for (std::size_t i = 0; i < info.devices.size(); ++i) {
    const auto& d = info.devices[i];
    devs.push_back({{"ordinal", d.ordinal},
                    {"name", d.name},
                    {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                    {"sm_count", d.sm_count},
                    {"memory_bytes", d.total_memory},
                    {"clock_mhz", d.clock_khz / 1000},
                    {"memory_clock_mhz", d.memory_clock_khz / 1000},
                    {"memory_bus_bits", d.memory_bus_bits},
                    {"memory_bandwidth_gbs", d.memory_bandwidth_gbs},
                    {"l2_bytes", d.l2_bytes},
                    {"pci_bus_id", d.pci_bus_id},
                    {"warmup_ms", i < info.warmup_ms.size() ? info.warmup_ms[i] : 0.0}});
  }
  j["devices"] = devs;
  j["device_note"] = info.device_note.empty() ? json(nullptr) : json(info.device_note);
  j["matrix"] = {{"file", info.matrix_file}, {"checksum", info.matrix_checksum}};
  j["options"] = {{"warmup", info.warmup},         {"min_samples", info.min_samples}, {"max_samples", info.max_samples}, {"min_time_s", info.min_time_s},
                  {"max_time_s", info.max_time_s}, {"validate", info.validate}, {"validate_queries", info.validate_queries},       {"host_memory", to_string(info.host_memory)}};
  json rs = json::array();
  for (const auto& r : results) rs.push_back(result_to_json(r));
  j["results"] = rs;
  return j;
}

namespace {
class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}
  void begin(const RunInfo& info) override { write(info, {}); }
  void result(const RunInfo& info, const std::vector<Result>& all) override { write(info, all); }
  void end(const RunInfo& info, const std::vector<Result>& all) override { write(info, all); }

 private:
  void write(const RunInfo& info, const std::vector<Result>& all) {
    write_file_atomically(path_, results_to_json(info, all).dump(1) + "\n");
  }
  std::string path_;
};
}  // namespace

std::unique_ptr<Reporter> make_json_reporter(std::string path) { return std::make_unique<JsonReporter>(std::move(path)); }

}  // namespace knn
