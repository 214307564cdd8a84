// The results schema's reader of one result: the one way `report`, `compare` and --isolate read
// results back. Result fields are checked strictly (every error names the file, results[i] and the
// field). The header and the file around the results: results_schema_file.cpp.
#include <fmt/format.h>

#include <limits>
#include <string>

#include "results_schema.hpp"

namespace knn {

using json = nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Strict field access for one result; `where` is the JSON path so far ("results[3].case").
class Fields {
 public:
  explicit Fields(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw SchemaError(file_.empty() ? fmt::format("{}: {}", where, what) : fmt::format("{}: {}: {}", file_, where, what));
  }
  void expect_object(const json& v, const std::string& where) const {
    if (!v.is_object()) fail(where, fmt::format("expected an object, found {}", v.type_name()));
  }
  const json& need(const json& obj, const char* key, const std::string& where) const {
    expect_object(obj, where);
    const auto it = obj.find(key);
    if (it == obj.end()) fail(where + "." + key, "missing");
    return *it;
  }
  // Absent or null: nullptr.
  const json* maybe(const json& obj, const char* key, const std::string& where) const {
    expect_object(obj, where);
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  std::string text(const json& v, const std::string& where) const {
    if (!v.is_string()) fail(where, fmt::format("expected a string, found {}", v.type_name()));
    return v.get<std::string>();
  }
  long long integer(const json& v, const std::string& where) const {
    if (!v.is_number_integer()) fail(where, fmt::format("expected an integer, found {}", v.type_name()));
    return v.is_number_unsigned() ? static_cast<long long>(v.get<unsigned long long>()) : v.get<long long>();
  }
  // The writer stores NaN as null: a null number reads as NaN.
  double number(const json& v, const std::string& where) const {
    if (v.is_null()) return kNaN;
    if (!v.is_number()) fail(where, fmt::format("expected a number, found {}", v.type_name()));
    return v.get<double>();
  }
  std::vector<double> numbers(const json& v, const std::string& where) const {
    if (!v.is_array()) fail(where, fmt::format("expected an array, found {}", v.type_name()));
    std::vector<double> out;
    for (const auto& x : v) {
      if (!x.is_number()) fail(where, fmt::format("expected numbers, found {}", x.type_name()));
      out.push_back(x.get<double>());
    }
    return out;
  }
  std::string need_string(const json& o, const char* key, const std::string& w) const { return text(need(o, key, w), w + "." + key); }
  long long need_int(const json& o, const char* key, const std::string& w) const { return integer(need(o, key, w), w + "." + key); }
  double need_number(const json& o, const char* key, const std::string& w) const { return number(need(o, key, w), w + "." + key); }
  std::string opt_string(const json& o, const char* key, const std::string& w) const {
    const json* v = maybe(o, key, w);
    return v ? text(*v, w + "." + key) : std::string();
  }
  long long opt_int(const json& o, const char* key, const std::string& w, long long fallback) const {
    const json* v = maybe(o, key, w);
    return v ? integer(*v, w + "." + key) : fallback;
  }
  bool opt_bool(const json& o, const char* key, const std::string& w) const {
    const json* v = maybe(o, key, w);
    if (v && !v->is_boolean()) fail(w + "." + key, fmt::format("expected true or false, found {}", v->type_name()));
    return v && v->get<bool>();
  }
  double opt_number(const json& o, const char* key, const std::string& w, double fallback) const {
    const auto it = o.find(key);
    return it == o.end() ? fallback : number(*it, w + "." + key);
  }

 private:
  std::string file_;
};

// {"name": "value", ...} (schema 2's params, params_chosen).
std::map<std::string, std::string> read_words(const Fields& f, const json& o, const std::string& w) {
  f.expect_object(o, w);
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : o.items()) out[name] = f.text(value, w + "." + name);
  return out;
}

void read_params(const Fields& f, const json& j, const std::string& w, Result& r) {
  if (const json* p = f.maybe(j, "params", w)) r.params = read_words(f, *p, w + ".params");
  if (const json* c = f.maybe(j, "params_chosen", w)) r.params_chosen = read_words(f, *c, w + ".params_chosen");
  if (const json* s = f.maybe(j, "params_set", w)) {
    if (!s->is_array()) f.fail(w + ".params_set", fmt::format("expected an array of parameter names, found {}", s->type_name()));
    for (std::size_t i = 0; i < s->size(); ++i) {
      const std::string name = f.text((*s)[i], fmt::format("{}.params_set[{}]", w, i));
      if (r.params.count(name) == 0) f.fail(fmt::format("{}.params_set[{}]", w, i), fmt::format("\"{}\", which params does not hold", name));
      r.params_set.push_back(name);
    }
  }
}

void read_case(const Fields& f, const json& c, const std::string& w, Result& r) {
  Case& k = r.problem_case;
  // One by one, so that the first missing field is the one named.
  k.id = int(f.need_int(c, "id", w));
  k.dim = int(f.need_int(c, "k", w));
  k.m = int(f.need_int(c, "m", w));
  k.n = int(f.need_int(c, "n", w));
  k.topk = int(f.need_int(c, "topk", w));
  const std::string dist = f.need_string(c, "distribution", w);
  if (!parse_distribution(dist, k.distribution))
    f.fail(w + ".distribution", fmt::format("\"{}\", expected uniform, clusters, duplicates or integers", dist));
  // Written since self-joins and integer data exist; older files hold neither.
  if (const json* mx = f.maybe(c, "max", w); mx && !mx->is_null()) k.integer_max = std::uint32_t(f.need_int(c, "max", w));
  if (const json* sj = f.maybe(c, "self_join", w)) {
    if (!sj->is_boolean()) f.fail(w + ".self_join", fmt::format("expected true or false, found {}", sj->type_name()));
    k.self_join = sj->get<bool>();
  }
  if (f.maybe(c, "validate_queries", w)) k.validate_queries = int(f.need_int(c, "validate_queries", w));
  const long long seed = f.need_int(c, "seed", w);
  if (seed < 0) f.fail(w + ".seed", fmt::format("{}, expected an integer >= 0", seed));
  k.seed = std::uint64_t(seed);
  const json& sums = f.need(c, "checksums", w);
  r.query_checksum = f.need_string(sums, "queries", w + ".checksums");
  r.reference_checksum = f.need_string(sums, "references", w + ".checksums");
  if (const json* g = f.maybe(c, "groups", w)) {
    if (!g->is_array()) f.fail(w + ".groups", fmt::format("expected an array, found {}", g->type_name()));
    for (const auto& x : *g) k.groups.push_back(f.text(x, w + ".groups"));
  }
  // Results written before data files existed have no such fields: generated data.
  k.queries_file = f.opt_string(c, "queries_file", w);
  k.references_file = f.opt_string(c, "references_file", w);
}

// A pass must carry its median, noise and sample count; the rest may be absent (NaN).
Stats read_stats(const Fields& f, const json& st, const std::string& w, bool required) {
  Stats s;
  if (required) {
    s.median = f.need_number(st, "median_ms", w);
    s.noise_pct = f.need_number(st, "noise_pct", w);
    s.samples = int(f.need_int(st, "samples", w));
  } else {
    f.expect_object(st, w);
    s.median = f.opt_number(st, "median_ms", w, s.median);
    s.noise_pct = f.opt_number(st, "noise_pct", w, s.noise_pct);
    s.samples = int(f.opt_int(st, "samples", w, 0));
  }
  s.min = f.opt_number(st, "min_ms", w, kNaN);
  s.max = f.opt_number(st, "max_ms", w, kNaN);
  s.mean = f.opt_number(st, "mean_ms", w, kNaN);
  s.stdev = f.opt_number(st, "stdev_ms", w, kNaN);
  s.median_noise_pct = f.opt_number(st, "median_noise_pct", w, kNaN);
  s.median_ci_low = s.median_ci_high = kNaN;
  if (const json* ci = f.maybe(st, "median_ci_ms", w)) {
    if (!ci->is_array() || ci->size() != 2) f.fail(w + ".median_ci_ms", fmt::format("expected [low, high], found {}", ci->dump()));
    s.median_ci_low = f.number((*ci)[0], w + ".median_ci_ms");
    s.median_ci_high = f.number((*ci)[1], w + ".median_ci_ms");
  }
  return s;
}

// Files written before the robust noise existed lack it: it is a function of the raw samples, so
// it is computed from them exactly as the writer would have; without raw samples it stays NaN.
void complete_robust_noise(const json& st, Result& r) {
  if (r.status != Status::pass || st.contains("median_noise_pct") || r.samples_ms.empty()) return;
  const Stats again = summarize(r.samples_ms);
  r.stats.median_noise_pct = again.median_noise_pct;
  r.stats.median_ci_low = again.median_ci_low;
  r.stats.median_ci_high = again.median_ci_high;
}

ResultClocks read_clocks(const Fields& f, const json& c, const std::string& w) {
  ResultClocks out;
  out.sm_clock_mhz_before = f.opt_number(c, "sm_clock_mhz_before", w, 0);
  out.sm_clock_mhz_after = f.opt_number(c, "sm_clock_mhz_after", w, 0);
  out.throttle_before = f.opt_string(c, "throttle_before", w);
  out.throttle_after = f.opt_string(c, "throttle_after", w);
  return out;
}

void read_validation(const Fields& f, const json& v, const std::string& w, Result& r) {
  const std::string status = f.need_string(v, "status", w);
  if (status == "off") return;
  if (status != "pass" && status != "fail") f.fail(w + ".status", fmt::format("\"{}\", expected pass, fail or off", status));
  ValidationReport& out = r.validation;
  r.validated = true;
  out.pass = status == "pass";
  out.checked = f.opt_int(v, "checked", w, 0);
  out.queries_checked = f.opt_int(v, "queries_checked", w, 0);
  out.mismatches = f.opt_int(v, "mismatches", w, 0);
  out.ties_accepted = f.opt_int(v, "ties_accepted", w, 0);
  out.invalid = f.opt_int(v, "invalid", w, 0);
  out.wrong_queries = f.opt_int(v, "wrong_queries", w, 0);
  // Written since peers are graded; before, a failed answer's true neighbours were not counted.
  const long long wrong = f.opt_int(v, "wrong_neighbors", w, out.pass ? 0 : out.mismatches + out.invalid);
  if (wrong < 0 || wrong > out.checked)
    f.fail(w + ".wrong_neighbors", fmt::format("{}, expected 0 to checked ({})", wrong, out.checked));
  out.found = out.checked - wrong;
  out.max_rel_error = f.opt_number(v, "max_rel_error", w, 0);
  out.first_problem = f.opt_string(v, "first_problem", w);
  // Written since published ground truth is read; older files were validated against v0 alone.
  if (const json* g = f.maybe(v, "ground_truth", w)) {
    out.ground_truth = f.text(*g, w + ".ground_truth");
    if (out.ground_truth.empty()) f.fail(w + ".ground_truth", "empty, expected what the answer was checked against (\"v0 reference\")");
  }
}

// {"build": {"samples_ms": [...], ...}, ...}: a phase without raw samples reads as empty.
std::map<std::string, std::vector<double>> read_phases(const Fields& f, const json& phases, const std::string& w) {
  f.expect_object(phases, w);
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, ph] : phases.items()) {
    const std::string pw = w + "." + name;
    const json* s = f.maybe(ph, "samples_ms", pw);
    out[name] = s ? f.numbers(*s, pw + ".samples_ms") : std::vector<double>{};
  }
  return out;
}

Result read_result(const Fields& f, const json& j, const std::string& w) {
  Result r;
  read_case(f, f.need(j, "case", w), w + ".case", r);
  r.version = f.need_string(j, "version", w);
  const std::string status = f.need_string(j, "status", w);
  if (status == "pass") r.status = Status::pass;
  else if (status == "fail") r.status = Status::fail;
  else if (status == "skip") r.status = Status::skip;
  else if (status == "inexact") r.status = Status::inexact;
  else f.fail(w + ".status", fmt::format("\"{}\", expected pass, fail, skip or inexact", status));
  r.title = f.opt_string(j, "title", w);
  r.family = f.opt_string(j, "family", w);
  r.reason = f.opt_string(j, "reason", w);
  read_params(f, j, w, r);
  r.path = f.opt_string(j, "path", w);
  r.note = f.opt_string(j, "note", w);
  if (timed(r.status))
    r.stats = read_stats(f, f.need(j, "stats", w), w + ".stats", true);
  else if (const json* st = f.maybe(j, "stats", w))
    r.stats = read_stats(f, *st, w + ".stats", false);
  if (const json* s = f.maybe(j, "samples_ms", w)) r.samples_ms = f.numbers(*s, w + ".samples_ms");
  if (const json* st = f.maybe(j, "stats", w)) complete_robust_noise(*st, r);
  r.calls_per_sample = int(f.opt_int(j, "calls_per_sample", w, 1));
  if (r.calls_per_sample < 1) f.fail(w + ".calls_per_sample", fmt::format("{}, expected an integer >= 1", r.calls_per_sample));
  r.noise_target_missed = f.opt_bool(j, "noise_target_missed", w);
  r.interrupted = f.opt_bool(j, "interrupted", w);
  if (const json* c = f.maybe(j, "clocks", w)) r.clocks = read_clocks(f, *c, w + ".clocks");
  if (const json* d = f.maybe(j, "devices_used", w))
    for (double x : f.numbers(*d, w + ".devices_used")) r.devices_used.push_back(int(x));
  const std::string memory = f.opt_string(j, "host_memory", w);
  if (!memory.empty() && memory != "pinned" && memory != "pageable")
    f.fail(w + ".host_memory", fmt::format("\"{}\", expected pinned or pageable", memory));
  r.host_memory = memory == "pinned" ? HostMemory::pinned : HostMemory::pageable;
  if (const json* v = f.maybe(j, "validation", w)) read_validation(f, *v, w + ".validation", r);
  if (const json* p = f.maybe(j, "phases", w)) r.phase_samples_ms = read_phases(f, *p, w + ".phases");
  if (const json* dp = f.maybe(j, "device_phases", w)) {
    f.expect_object(*dp, w + ".device_phases");
    for (const auto& [dev, phases] : dp->items()) {
      const std::string dw = w + ".device_phases." + dev;
      if (dev.empty() || dev.find_first_not_of("0123456789") != std::string::npos) f.fail(dw, "expected a device ordinal as the key");
      r.device_phase_samples_ms[std::stoi(dev)] = read_phases(f, phases, dw);
    }
  }
  return r;
}

}  // namespace

Result result_from_json(const json& j, const std::string& file, std::size_t index) {
  return read_result(Fields(file), j, fmt::format("results[{}]", index));
}

Result result_from_json(const json& j) { return read_result(Fields(""), j, "result"); }

}  // namespace knn
