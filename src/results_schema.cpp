// The results schema's writer. Its reader is results_schema_read.cpp.
#include "results_schema.hpp"

#include <fmt/format.h>

#include "build_info.hpp"
#include "results_schema_canary.hpp"
#include "results_schema_busy.hpp"
#include "results_schema_floor.hpp"

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

json validation_json(const Result& r) {
  if (r.status == Status::skip) return nullptr;
  if (!r.validated) return {{"status", "off"}};
  const auto& v = r.validation;
  return {{"status", v.pass ? "pass" : "fail"},
          {"checked", v.checked},
          {"queries_checked", v.queries_checked},
          {"mismatches", v.mismatches},
          {"ties_accepted", v.ties_accepted},
          {"invalid", v.invalid},
          {"wrong_queries", v.wrong_queries},
          {"wrong_neighbors", v.wrong_neighbors()},
          {"recall", v.recall()},
          {"max_rel_error", v.max_rel_error},
          {"tolerance", {{"rtol", kDistanceRtol}, {"atol", kDistanceAtol}}},
          {"ground_truth", v.ground_truth},
          {"first_problem", v.first_problem.empty() ? json(nullptr) : json(v.first_problem)}};
}

json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// A result that did not pass has no time: its statistics are null, never 0.
json stats_json(const Result& r) {
  const Stats& s = r.stats;
  const bool timed = knn::timed(r.status) && s.samples > 0;
  auto ms = [timed](double v) { return timed ? json(v) : json(nullptr); };
  return {{"samples", s.samples},
          {"median_ms", ms(s.median)},
          {"min_ms", ms(s.min)},
          {"max_ms", ms(s.max)},
          {"mean_ms", ms(s.mean)},
          {"stdev_ms", ms(s.stdev)},
          {"noise_pct", ms(s.noise_pct)},
          {"median_ci_ms", timed ? json::array({ms(s.median_ci_low), ms(s.median_ci_high)}) : json(nullptr)},
          {"median_noise_pct", ms(s.median_noise_pct)}};
}

json clocks_json(const ResultClocks& c) {
  if (!c.recorded()) return nullptr;
  return {{"sm_clock_mhz_before", c.sm_clock_mhz_before},
          {"sm_clock_mhz_after", c.sm_clock_mhz_after},
          {"throttle_before", c.throttle_before},
          {"throttle_after", c.throttle_after}};
}

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
               {"max", c.distribution == Distribution::integers ? json(c.integer_max) : json(nullptr)},
               {"self_join", c.self_join},
               {"validate_queries", c.validate_queries},
               {"seed", c.seed},
               {"groups", c.groups},
               {"queries_file", text_or_null(c.queries_file)},
               {"references_file", text_or_null(c.references_file)},
               {"checksums", {{"queries", r.query_checksum}, {"references", r.reference_checksum}}}};
  j["version"] = r.version;
  j["title"] = r.title;
  j["family"] = r.family;
  j["status"] = to_string(r.status);
  j["reason"] = text_or_null(r.reason);
  j["params"] = r.params;  // every declared parameter's value (schema 2)
  j["params_set"] = r.params_set;
  j["params_chosen"] = r.params_chosen;
  j["path"] = text_or_null(r.path);
  j["note"] = text_or_null(r.note);
  j["devices_used"] = r.devices_used;
  j["host_memory"] = to_string(r.host_memory);
  j["validation"] = validation_json(r);
  j["samples_ms"] = r.samples_ms;
  j["calls_per_sample"] = r.calls_per_sample;
  j["stats"] = stats_json(r);
  j["noise_target_missed"] = r.noise_target_missed;
  j["interrupted"] = r.interrupted;
  if (r.interleaved) j["interleaved"] = true;  // --interleave only: older readers never see it
  j["clocks"] = clocks_json(r.clocks);
  if (r.canary.recorded()) j["canary"] = canary_to_json(r.canary);  // results_schema_canary.cpp
  if (r.host_facts.recorded()) j["host_facts"] = result_host_facts_to_json(r.host_facts);
  if (r.floor.decided) j["floor"] = floor_to_json(r.floor);  // results_schema_floor.cpp
  if (r.gpu_busy.decided && timed(r.status)) j["gpu_busy"] = gpu_busy_to_json(r.gpu_busy);  // results_schema_busy.cpp
  j["phases"] = phases_json(r.phase_samples_ms);
  json dev = json::object();
  for (const auto& [d, phases] : r.device_phase_samples_ms) dev[std::to_string(d)] = phases_json(phases);
  j["device_phases"] = dev;
  return j;
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
               {"memory_bytes", info.host.memory_bytes}, {"omp_threads", info.host.omp_threads}, {"os", info.host.os},
               {"omp_env", info.host.omp_env}, {"load_average", {info.host.load_1min, info.host.load_5min, info.host.load_15min}},
               {"cpu_governor", info.host.cpu_governor}};
  if (info.host_facts.recorded()) j["host_facts"] = host_facts_to_json(info.host_facts);
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
                    {"warmup_ms", i < info.warmup_ms.size() ? info.warmup_ms[i] : 0.0},
                    {"rates", device_rates_to_json(i < info.device_rates.size() ? info.device_rates[i] : DeviceRates{})}});
  }
  j["devices"] = devs;
  j["device_note"] = text_or_null(info.device_note);
  j["rates_note"] = text_or_null(info.rates_note);
  if (info.mpi_ranks > 0) {  // under mpirun: the ranks, each with its host and GPU
    json places = json::array();
    for (const RankPlace& p : info.rank_places) places.push_back({{"rank", p.rank}, {"host", p.host}, {"gpu", p.gpu}});
    j["mpi"] = {{"ranks", info.mpi_ranks}, {"per_rank", places}};
  }
  j["matrix"] = {{"file", info.matrix_file}, {"checksum", info.matrix_checksum}};
  j["options"] = {{"warmup", info.warmup},         {"min_samples", info.min_samples}, {"max_samples", info.max_samples}, {"min_time_s", info.min_time_s},
                  {"max_time_s", info.max_time_s}, {"validate", info.validate}, {"validate_queries", info.validate_queries},       {"host_memory", to_string(info.host_memory)},
                  {"max_noise_pct", info.max_noise_pct}};
  json rs = json::array();
  for (const auto& r : results) rs.push_back(result_to_json(r));
  j["results"] = rs;
  return j;
}

void read_mpi_json(const nlohmann::json& run, RunInfo& info) {
  if (!run.contains("mpi") || !run["mpi"].is_object()) return;
  const nlohmann::json& mpi = run["mpi"];
  info.mpi_ranks = mpi.value("ranks", 0);
  if (mpi.contains("per_rank") && mpi["per_rank"].is_array())
    for (const nlohmann::json& p : mpi["per_rank"])
      if (p.is_object()) info.rank_places.push_back(RankPlace{p.value("rank", 0), p.value("host", ""), p.value("gpu", "")});
}

}  // namespace knn
