// The results schema's reader of one result: the one way `report`, `compare` and --isolate read
// results back. Result fields are checked strictly (every error names the file, results[i] and the
// field). The header and the file around the results: results_schema_file.cpp.
#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>

#include "measure.hpp"  // kOtherPhase
#include "results_schema.hpp"  // and results_schema_canary.hpp
#include "results_schema_busy.hpp"
#include "results_schema_floor.hpp"
#include "stats.hpp"

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
  // The writer writes these fields here and no other: an unknown one is a typo or a hand edit.
  void only(const json& obj, const std::string& where, std::initializer_list<const char*> known) const {
    expect_object(obj, where);
    refuse_unknown_fields(obj, where, known, [this](const std::string& w, const std::string& what) { fail(w, what); });
  }
  // A count or size: an integer in [lo, hi].
  long long bounded(const json& v, const std::string& where, long long lo, long long hi, const char* what) const {
    const long long x = integer(v, where);
    if (x < lo || x > hi) fail(where, fmt::format("{}, expected {}", x, what));
    return x;
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

bool is_hex(const std::string& s) { return s.find_first_not_of("0123456789abcdef") == std::string::npos; }

// A text written raw into markdown and onto the terminal: no control character (a newline, ESC).
bool has_control(const std::string& s) {
  for (const char ch : s)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return true;
  return false;
}

// {"name": "value", ...} (schema 2's params, params_chosen).
std::map<std::string, std::string> read_words(const Fields& f, const json& o, const std::string& w) {
  f.expect_object(o, w);
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : o.items()) {
    out[name] = f.text(value, w + "." + name);
    // Labels print them raw into markdown and onto the terminal.
    if (name.empty() || has_control(name) || has_control(out[name]))
      f.fail(w + "." + name, "a parameter name or value that is empty or holds a control character");
  }
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
  f.only(c, w, {"id", "k", "m", "n", "topk", "distribution", "max", "self_join", "validate_queries", "seed", "groups", "queries_file",
                "references_file", "checksums"});
  Case& k = r.problem_case;
  // One by one, so that the first missing field is the one named. The bounds are the matrix's.
  k.id = int(f.bounded(f.need(c, "id", w), w + ".id", 0, INT_MAX, "a case id >= 0"));
  k.dim = int(f.bounded(f.need(c, "k", w), w + ".k", 1, INT_MAX, "a dimension k >= 1"));
  k.m = int(f.bounded(f.need(c, "m", w), w + ".m", 1, INT_MAX, "a query count m >= 1"));
  k.n = int(f.bounded(f.need(c, "n", w), w + ".n", 1, INT_MAX, "a reference count n >= 1"));
  k.topk = int(f.bounded(f.need(c, "topk", w), w + ".topk", 1, INT_MAX, "a neighbour count topk >= 1"));
  const std::string dist = f.need_string(c, "distribution", w);
  if (!parse_distribution(dist, k.distribution))
    f.fail(w + ".distribution", fmt::format("\"{}\", expected uniform, clusters, duplicates or integers", dist));
  // Written since self-joins and integer data exist; older files hold neither.
  if (const json* mx = f.maybe(c, "max", w); mx && !mx->is_null()) {
    if (k.distribution != Distribution::integers) f.fail(w + ".max", fmt::format("{}, but the distribution is {}: a bound only for integers", mx->dump(), dist));
    k.integer_max = std::uint32_t(f.bounded(*mx, w + ".max", 1, UINT32_MAX, "the integers' bound, >= 1"));
  }
  if (const json* sj = f.maybe(c, "self_join", w)) {
    if (!sj->is_boolean()) f.fail(w + ".self_join", fmt::format("expected true or false, found {}", sj->type_name()));
    k.self_join = sj->get<bool>();
  }
  if (k.self_join && k.m != k.n) f.fail(w + ".m", fmt::format("{}, but a self-join queries its own n = {} references: m = n", k.m, k.n));
  if (k.topk > k.n - (k.self_join ? 1 : 0))
    f.fail(w + ".topk", k.self_join ? fmt::format("{}, expected at most n − 1 = {}: a self-join excludes the point itself", k.topk, k.n - 1)
                                    : fmt::format("{}, expected at most n = {} (the reference count)", k.topk, k.n));
  if (const json* vq = f.maybe(c, "validate_queries", w)) k.validate_queries = int(f.bounded(*vq, w + ".validate_queries", 0, INT_MAX, "0 (every query) or a count"));
  const long long seed = f.need_int(c, "seed", w);
  if (seed < 0) f.fail(w + ".seed", fmt::format("{}, expected an integer >= 0", seed));
  k.seed = std::uint64_t(seed);
  const json& sums = f.need(c, "checksums", w);
  f.only(sums, w + ".checksums", {"queries", "references"});
  r.query_checksum = f.need_string(sums, "queries", w + ".checksums");
  r.reference_checksum = f.need_string(sums, "references", w + ".checksums");
  // "" where the case's data was never loaded (a skip for a data file to fetch, a child of --isolate
  // that died before its result): no checksum, never a wrong one.
  for (const auto& [key, sum] : {std::pair{"queries", &r.query_checksum}, std::pair{"references", &r.reference_checksum}})
    if (!sum->empty() && (sum->size() != 16 || !is_hex(*sum)))
      f.fail(w + ".checksums." + key, fmt::format("{}, expected 16 lowercase hex digits (the input's checksum) or \"\"", json(*sum).dump()));
  if (const json* g = f.maybe(c, "groups", w)) {
    if (!g->is_array()) f.fail(w + ".groups", fmt::format("expected an array, found {}", g->type_name()));
    for (const auto& x : *g) k.groups.push_back(f.text(x, w + ".groups"));
  }
  // Results written before data files existed have no such fields: generated data.
  k.queries_file = f.opt_string(c, "queries_file", w);
  k.references_file = f.opt_string(c, "references_file", w);
}

// A timed result (pass, inexact) carries its median, extremes, mean and noise, each a time or
// percentage >= 0; any other result's are null or, in older files, such numbers too. stdev and the
// median's noise and interval are NaN (null) under 2 or 3 samples.
Stats read_stats(const Fields& f, const json& st, const std::string& w, bool timed) {
  f.only(st, w, {"samples", "median_ms", "min_ms", "max_ms", "mean_ms", "stdev_ms", "noise_pct", "median_ci_ms", "median_noise_pct"});
  Stats s;
  s.samples = int(f.bounded(f.need(st, "samples", w), w + ".samples", 0, INT_MAX, "a sample count >= 0"));
  const auto value = [&](const char* key, bool required) {
    const double x = required ? f.need_number(st, key, w) : f.opt_number(st, key, w, kNaN);
    if (required && std::isnan(x)) f.fail(w + "." + key, "null, expected a number >= 0 for a timed result (pass or inexact)");
    if (!std::isnan(x) && !(x >= 0 && std::isfinite(x))) f.fail(w + "." + key, fmt::format("{}, expected a number >= 0", x));
    return x;
  };
  s.median = value("median_ms", timed);
  s.min = value("min_ms", timed);
  s.max = value("max_ms", timed);
  s.mean = value("mean_ms", timed);
  s.noise_pct = value("noise_pct", timed);
  s.stdev = value("stdev_ms", false);
  s.median_noise_pct = value("median_noise_pct", false);
  s.median_ci_low = s.median_ci_high = kNaN;
  if (const json* ci = f.maybe(st, "median_ci_ms", w)) {
    if (!ci->is_array() || ci->size() != 2) f.fail(w + ".median_ci_ms", fmt::format("expected [low, high], found {}", ci->dump()));
    s.median_ci_low = f.number((*ci)[0], w + ".median_ci_ms[0]");
    s.median_ci_high = f.number((*ci)[1], w + ".median_ci_ms[1]");
    if (!std::isnan(s.median_ci_low) && !(s.median_ci_low <= s.median_ci_high))
      f.fail(w + ".median_ci_ms", fmt::format("{}, expected [low, high] with low <= high", ci->dump()));
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
  f.only(c, w, {"sm_clock_mhz_before", "sm_clock_mhz_after", "throttle_before", "throttle_after"});
  ResultClocks out;
  out.sm_clock_mhz_before = f.opt_number(c, "sm_clock_mhz_before", w, 0);
  out.sm_clock_mhz_after = f.opt_number(c, "sm_clock_mhz_after", w, 0);
  out.throttle_before = f.opt_string(c, "throttle_before", w);
  out.throttle_after = f.opt_string(c, "throttle_after", w);
  return out;
}

// validate.cpp passes an answer only when it has no mismatched and no invalid neighbour: a "pass"
// with either (or with wrong queries) contradicts itself.
void read_validation(const Fields& f, const json& v, const std::string& w, Result& r) {
  f.only(v, w, {"status", "checked", "queries_checked", "mismatches", "ties_accepted", "invalid", "wrong_queries", "wrong_neighbors", "recall",
                "max_rel_error", "tolerance", "ground_truth", "first_problem"});
  const std::string status = f.need_string(v, "status", w);
  if (status == "off") return;
  if (status != "pass" && status != "fail") f.fail(w + ".status", fmt::format("\"{}\", expected pass, fail or off", status));
  ValidationReport& out = r.validation;
  r.validated = true;
  out.pass = status == "pass";
  const auto count = [&](const char* key, long long fallback) {
    const json* x = f.maybe(v, key, w);
    return x ? f.bounded(*x, w + "." + key, 0, LLONG_MAX, "a count >= 0") : fallback;
  };
  out.checked = count("checked", 0);
  out.queries_checked = count("queries_checked", 0);
  out.mismatches = count("mismatches", 0);
  out.ties_accepted = count("ties_accepted", 0);
  out.invalid = count("invalid", 0);
  out.wrong_queries = count("wrong_queries", 0);
  // (An inexact result with a passing validation is refused for that: check_results_agree.)
  for (const auto& [key, n] : {std::pair{"mismatches", out.mismatches}, std::pair{"invalid", out.invalid}, std::pair{"wrong_queries", out.wrong_queries}})
    if (out.pass && n > 0 && r.status != Status::inexact)
      f.fail(w + "." + key, fmt::format("{}, but the validation status is pass (a pass has none)", n));
  // Written since peers are graded; before, a failed answer's true neighbours were not counted.
  const long long wrong = count("wrong_neighbors", out.pass ? 0 : out.mismatches + out.invalid);
  if (wrong > out.checked) f.fail(w + ".wrong_neighbors", fmt::format("{}, expected 0 to checked ({})", wrong, out.checked));
  out.found = out.checked - wrong;
  if (const json* rc = f.maybe(v, "recall", w); rc && !(f.number(*rc, w + ".recall") >= 0 && rc->get<double>() <= 1))
    f.fail(w + ".recall", fmt::format("{}, expected a fraction in [0, 1]", rc->dump()));
  out.max_rel_error = f.opt_number(v, "max_rel_error", w, 0);
  if (!std::isnan(out.max_rel_error) && !(out.max_rel_error >= 0))
    f.fail(w + ".max_rel_error", fmt::format("{}, expected a relative error >= 0", out.max_rel_error));
  if (const json* t = f.maybe(v, "tolerance", w)) f.only(*t, w + ".tolerance", {"rtol", "atol"});
  out.first_problem = f.opt_string(v, "first_problem", w);
  // Written since published ground truth is read; older files were validated against v0 alone.
  if (const json* g = f.maybe(v, "ground_truth", w)) {
    out.ground_truth = f.text(*g, w + ".ground_truth");
    if (out.ground_truth.empty()) f.fail(w + ".ground_truth", "empty, expected what the answer was checked against (\"v0 reference\")");
  }
}

// Times >= 0 ms; `signed_times`: finite, of either sign (the "other" phase, the wall time less the
// version's own phases, is negative where those overlap: measure.hpp, kOtherPhase).
std::vector<double> read_samples(const Fields& f, const json& v, const std::string& where, bool signed_times = false) {
  std::vector<double> out = f.numbers(v, where);
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!std::isfinite(out[i]) || (!signed_times && out[i] < 0))
      f.fail(fmt::format("{}[{}]", where, i), fmt::format("{}, expected {}", out[i], signed_times ? "a finite time in ms" : "a time >= 0 ms"));
  return out;
}

// {"build": {"samples_ms": [...], "median_ms": ..., ...}, ...}: a phase without raw samples reads
// as empty (its median into `recorded`); with them, its count, median, min and max must be theirs.
std::map<std::string, std::vector<double>> read_phases(const Fields& f, const json& phases, const std::string& w, std::map<std::string, double>* recorded = nullptr) {
  f.expect_object(phases, w);
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, ph] : phases.items()) {
    const std::string pw = w + "." + name;
    f.only(ph, pw, {"median_ms", "min_ms", "max_ms", "samples", "samples_ms"});
    const json* s = f.maybe(ph, "samples_ms", pw);
    std::vector<double>& samples = out[name] = s ? read_samples(f, *s, pw + ".samples_ms", name == kOtherPhase) : std::vector<double>{};
    if (const long long count = f.opt_int(ph, "samples", pw, -1); s && count >= 0 && std::size_t(count) != samples.size())
      f.fail(pw + ".samples", fmt::format("{}, but samples_ms holds {} samples", count, samples.size()));
    const double median = f.opt_number(ph, "median_ms", pw, kNaN);
    if (samples.empty() && recorded && std::isfinite(median)) (*recorded)[name] = median;
    if (samples.empty()) continue;
    const Stats again = summarize(samples);
    for (const auto& [key, recomputed] : {std::pair{"median_ms", again.median}, std::pair{"min_ms", again.min}, std::pair{"max_ms", again.max}})
      if (const double written = f.opt_number(ph, key, pw, kNaN); !std::isnan(written) && !stat_agrees(written, recomputed))
        f.fail(pw + "." + key, fmt::format("{}, but its samples_ms give {}", written, recomputed));
  }
  return out;
}

Result read_result(const Fields& f, const json& j, const std::string& w) {
  f.only(j, w, {"case", "version", "title", "family", "status", "reason", "path", "note", "devices_used", "host_memory", "validation", "samples_ms",
                "calls_per_sample", "stats", "noise_target_missed", "interrupted", "clocks", "phases", "device_phases", "params",
                "params_set", "params_chosen", "canary", "host_facts", "floor", "gpu_busy", "interleaved"});
  Result r;
  read_case(f, f.need(j, "case", w), w + ".case", r);
  r.version = f.need_string(j, "version", w);
  // Written raw into markdown and onto the terminal.
  if (r.version.empty() || has_control(r.version))
    f.fail(w + ".version", fmt::format("{}, expected a version id (no empty one, no control character)", json(r.version).dump()));
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
  for (const auto& [key, text] : {std::pair{"title", &r.title}, std::pair{"reason", &r.reason}, std::pair{"path", &r.path}, std::pair{"note", &r.note}})
    if (text->find_first_of("\x1b\r\x7f") != std::string::npos)  // written raw into markdown and onto the terminal
      f.fail(w + "." + key, "holds an escape, carriage return or delete character (the tables print it raw)");
  if (timed(r.status))
    r.stats = read_stats(f, f.need(j, "stats", w), w + ".stats", true);
  else if (const json* st = f.maybe(j, "stats", w))
    r.stats = read_stats(f, *st, w + ".stats", false);
  // Absent reads as none: then stats.samples must be 0 (check_results_agree).
  if (const json* s = f.maybe(j, "samples_ms", w)) r.samples_ms = read_samples(f, *s, w + ".samples_ms");
  if (const json* st = f.maybe(j, "stats", w)) complete_robust_noise(*st, r);
  r.calls_per_sample = int(f.opt_int(j, "calls_per_sample", w, 1));
  if (r.calls_per_sample < 1) f.fail(w + ".calls_per_sample", fmt::format("{}, expected an integer >= 1", r.calls_per_sample));
  r.noise_target_missed = f.opt_bool(j, "noise_target_missed", w);
  r.interrupted = f.opt_bool(j, "interrupted", w);
  r.interleaved = f.opt_bool(j, "interleaved", w);  // --interleave; its partner is checked with the others (results_schema_check.cpp)
  if (const json* c = f.maybe(j, "clocks", w)) r.clocks = read_clocks(f, *c, w + ".clocks");
  if (const json* d = f.maybe(j, "devices_used", w)) {
    if (!d->is_array()) f.fail(w + ".devices_used", fmt::format("expected an array, found {}", d->type_name()));
    for (std::size_t i = 0; i < d->size(); ++i)
      r.devices_used.push_back(int(f.bounded((*d)[i], fmt::format("{}.devices_used[{}]", w, i), 0, INT_MAX, "a device ordinal >= 0")));
  }
  const std::string memory = f.opt_string(j, "host_memory", w);
  if (!memory.empty() && memory != "pinned" && memory != "pageable")
    f.fail(w + ".host_memory", fmt::format("\"{}\", expected pinned or pageable", memory));
  r.host_memory = memory == "pinned" ? HostMemory::pinned : HostMemory::pageable;
  // The writer records a validation (pass, fail or "off" under --no-validate) for every result
  // that ran, and null for a skip.
  const json* v = f.maybe(j, "validation", w);
  if (v) read_validation(f, *v, w + ".validation", r);
  if (!v && r.status != Status::skip)
    f.fail(w + ".validation", fmt::format("missing, expected the validation of a {} result (\"off\" when not validated)", status));
  if (v && r.status == Status::skip) f.fail(w + ".validation", "expected null for a skipped result (it ran nothing to validate)");
  if (r.status == Status::pass && r.validated && !r.validation.pass)
    f.fail(w + ".status", "\"pass\", but its validation failed (a failed answer is a fail, or inexact for a peer)");
  if (const json* p = f.maybe(j, "phases", w)) r.phase_samples_ms = read_phases(f, *p, w + ".phases", &r.phase_recorded_median_ms);
  if (const json* dp = f.maybe(j, "device_phases", w)) {
    f.expect_object(*dp, w + ".device_phases");
    for (const auto& [dev, phases] : dp->items()) {
      const std::string dw = w + ".device_phases." + dev;
      if (dev.empty() || dev.size() > 9 || dev.find_first_not_of("0123456789") != std::string::npos) f.fail(dw, "expected a device ordinal as the key");
      r.device_phase_samples_ms[std::stoi(dev)] = read_phases(f, phases, dw);
    }
  }
  const SchemaFail fail = [&f](const std::string& at, const std::string& what) { f.fail(at, what); };
  read_result_canary(j, w, r, fail);  // results_schema_canary.cpp
  read_result_floor(j, w, r, fail);   // results_schema_floor.cpp
  read_result_gpu_busy(j, w, r, fail);  // results_schema_busy.cpp
  return r;
}

}  // namespace

Result result_from_json(const json& j, const std::string& file, std::size_t index) {
  return read_result(Fields(file), j, fmt::format("results[{}]", index));
}

Result result_from_json(const json& j) { return read_result(Fields(""), j, "result"); }

Result result_from_json_at(const json& j, const std::string& file, const std::string& where) { return read_result(Fields(file), j, where); }

}  // namespace knn
