#include "compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "report.hpp"
#include "selection.hpp"

namespace knn {

using json = nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMinSamples = 3;  // fewer on either side: no verdict, no test

// ---------------------------------------------------------------- reading a results document

[[noreturn]] void bad(const std::string& file, const std::string& what) { throw CompareError(fmt::format("{}: {}", file, what)); }

const json& field(const json& obj, const char* key, const std::string& file, const std::string& where) {
  if (!obj.is_object()) bad(file, fmt::format("{}: expected an object, found {}", where, obj.type_name()));
  const auto it = obj.find(key);
  if (it == obj.end()) bad(file, fmt::format("{}.{}: missing", where, key));
  return *it;
}

std::string need_string(const json& obj, const char* key, const std::string& file, const std::string& where) {
  const json& v = field(obj, key, file, where);
  if (!v.is_string()) bad(file, fmt::format("{}.{}: expected a string, found {}", where, key, v.type_name()));
  return v.get<std::string>();
}

long long need_int(const json& obj, const char* key, const std::string& file, const std::string& where) {
  const json& v = field(obj, key, file, where);
  if (!v.is_number_integer()) bad(file, fmt::format("{}.{}: expected an integer, found {}", where, key, v.type_name()));
  return v.is_number_unsigned() ? static_cast<long long>(v.get<unsigned long long>()) : v.get<long long>();
}

// The writer stores NaN as null: a null number reads as NaN.
double need_number(const json& obj, const char* key, const std::string& file, const std::string& where) {
  const json& v = field(obj, key, file, where);
  if (v.is_null()) return kNaN;
  if (!v.is_number()) bad(file, fmt::format("{}.{}: expected a number, found {}", where, key, v.type_name()));
  return v.get<double>();
}

// Header fields are informative: a missing or odd one shows as empty, never stops the comparison.
std::string opt_string(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

double opt_number(const json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<double>() : 0;
}

const json& opt_object(const json& obj, const char* key) {
  static const json empty = json::object();
  if (!obj.is_object()) return empty;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

struct Entry {
  int case_id = 0;
  std::string version, params, query_checksum, reference_checksum, status, reason;
  double median_ms = kNaN, noise_pct = kNaN;
  int samples = 0;
  bool has_raw = false;
  std::vector<double> raw_ms;
  std::string key() const { return fmt::format("{}#{}#{}", version, case_id, params); }
};

Entry read_entry(const json& r, const std::string& file, std::size_t index) {
  const std::string where = fmt::format("results[{}]", index);
  Entry e;
  const json& c = field(r, "case", file, where);
  const std::string cw = where + ".case";
  e.case_id = int(need_int(c, "id", file, cw));
  // One by one, so that the first missing field is the one named.
  const long long dim = need_int(c, "k", file, cw), m = need_int(c, "m", file, cw), n = need_int(c, "n", file, cw);
  const long long topk = need_int(c, "topk", file, cw);
  const std::string distribution = need_string(c, "distribution", file, cw);
  const long long seed = need_int(c, "seed", file, cw);
  e.params = fmt::format("k={} m={} n={} topk={} {} seed={}", dim, m, n, topk, distribution, seed);
  const json& sums = field(c, "checksums", file, cw);
  e.query_checksum = need_string(sums, "queries", file, cw + ".checksums");
  e.reference_checksum = need_string(sums, "references", file, cw + ".checksums");
  e.version = need_string(r, "version", file, where);
  e.status = need_string(r, "status", file, where);
  if (e.status != "pass" && e.status != "fail" && e.status != "skip")
    bad(file, fmt::format("{}.status: \"{}\", expected pass, fail or skip", where, e.status));
  e.reason = opt_string(r, "reason");
  if (e.status == "pass") {
    const json& st = field(r, "stats", file, where);
    e.median_ms = need_number(st, "median_ms", file, where + ".stats");
    e.noise_pct = need_number(st, "noise_pct", file, where + ".stats");
    e.samples = int(need_int(st, "samples", file, where + ".stats"));
  }
  const auto raw = r.find("samples_ms");
  if (raw != r.end() && !raw->is_null()) {
    if (!raw->is_array()) bad(file, fmt::format("{}.samples_ms: expected an array, found {}", where, raw->type_name()));
    for (const auto& x : *raw) {
      if (!x.is_number()) bad(file, fmt::format("{}.samples_ms: expected numbers, found {}", where, x.type_name()));
      e.raw_ms.push_back(x.get<double>());
    }
    e.has_raw = true;
  }
  return e;
}

RunSummary read_summary(const json& doc, const std::string& file) {
  RunSummary s;
  s.file = file;
  const json& meta = opt_object(doc, "meta");
  const json& host = opt_object(doc, "host");
  s.hostname = opt_string(host, "hostname");
  s.cpu_model = opt_string(host, "cpu_model");
  s.os = opt_string(host, "os");
  s.cores = int(opt_number(host, "cores"));
  s.omp_threads = int(opt_number(host, "omp_threads"));
  s.memory_bytes = opt_number(host, "memory_bytes");
  const auto devs = doc.find("devices");
  if (devs != doc.end() && devs->is_array())
    for (const auto& d : *devs) {
      DeviceSummary ds;
      ds.ordinal = int(opt_number(d, "ordinal"));
      ds.name = opt_string(d, "name");
      ds.compute_capability = opt_string(d, "compute_capability");
      ds.sm_count = int(opt_number(d, "sm_count"));
      ds.memory_bytes = opt_number(d, "memory_bytes");
      s.devices.push_back(ds);
    }
  s.device_note = opt_string(doc, "device_note");
  s.knnbench_version = opt_string(meta, "knnbench_version");
  s.git_sha = opt_string(meta, "git_sha");
  s.build_type = opt_string(meta, "build_type");
  s.cuda_runtime = opt_string(meta, "cuda_runtime");
  s.cuda_driver = opt_string(meta, "cuda_driver");
  s.date_utc = opt_string(meta, "date_utc");
  const auto complete = meta.find("complete");
  s.complete = complete == meta.end() || !complete->is_boolean() || complete->get<bool>();
  s.host_memory = opt_string(opt_object(doc, "options"), "host_memory");
  return s;
}

std::vector<Entry> read_entries(const json& doc, const std::string& file) {
  if (!doc.is_object()) bad(file, fmt::format("not a knnbench results file (the top level is {}, expected an object)", doc.type_name()));
  const auto sv = doc.find("schema_version");
  if (sv == doc.end()) bad(file, "no schema_version: not a knnbench results file");
  if (!sv->is_number_integer() || sv->get<long long>() != kResultsSchemaVersion)
    bad(file, fmt::format("schema_version {}, this knnbench reads {}", sv->dump(), kResultsSchemaVersion));
  const std::string tool = opt_string(opt_object(doc, "meta"), "tool");
  if (!tool.empty() && tool != "knnbench") bad(file, fmt::format("meta.tool is \"{}\": not a knnbench results file", tool));
  const json& results = field(doc, "results", file, "(top level)");
  if (!results.is_array()) bad(file, fmt::format("results: expected an array, found {}", results.type_name()));
  std::vector<Entry> out;
  for (std::size_t i = 0; i < results.size(); ++i) out.push_back(read_entry(results[i], file, i));
  return out;
}

// ---------------------------------------------------------------- filters

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

struct Filter {
  std::set<std::string> versions;  // empty: all
  std::set<int> cases;             // empty: all
  bool keep(const Entry& e) const {
    return (versions.empty() || versions.count(e.version)) && (cases.empty() || cases.count(e.case_id));
  }
};

// Each filter item must match something in A or B: a typo must not pass CI as "nothing slower".
Filter make_filter(const CompareOptions& opts, const std::vector<Entry>& a, const std::vector<Entry>& b) {
  std::set<std::string> have_versions;
  std::set<int> have_cases;
  for (const auto* side : {&a, &b})
    for (const auto& e : *side) {
      have_versions.insert(e.version);
      have_cases.insert(e.case_id);
    }
  const std::string files = fmt::format("{} or {}", opts.file_a.empty() ? "A" : opts.file_a, opts.file_b.empty() ? "B" : opts.file_b);
  Filter f;
  for (const auto& v : split_commas(opts.versions)) {
    if (!have_versions.count(v)) {
      std::vector<std::string> known(have_versions.begin(), have_versions.end());
      std::sort(known.begin(), known.end(), version_less);
      throw CompareError(fmt::format("--version {}: no result for it in {} (versions there: {})", v, files, known.empty() ? "none" : join(known)));
    }
    f.versions.insert(v);
  }
  for (const auto& item : split_commas(opts.cases)) {
    int lo = 0, hi = 0;
    if (!parse_case_range(item, lo, hi)) throw CompareError(fmt::format("--case {}: expected a case id, a range like 8-11, or a comma list", item));
    bool any = false;
    for (int id = lo; id <= hi; ++id) {
      f.cases.insert(id);
      any = any || have_cases.count(id);
    }
    if (!any) {
      std::vector<std::string> known;
      for (int id : have_cases) known.push_back(std::to_string(id));
      throw CompareError(fmt::format("--case {}: no result for it in {} (case ids there: {})", item, files, known.empty() ? "none" : join(known)));
    }
  }
  return f;
}

// ---------------------------------------------------------------- judging

Verdict judge(const Entry& a, const Entry& b) {
  if (a.samples < kMinSamples || b.samples < kMinSamples) return Verdict::unknown;
  if (!(a.median_ms > 0) || !(b.median_ms > 0) || !std::isfinite(a.noise_pct) || !std::isfinite(b.noise_pct)) return Verdict::unknown;
  // nvbench's rule: a difference within the larger relative noise is no difference.
  const double rel = std::abs(b.median_ms - a.median_ms) / a.median_ms;
  const double noise = std::max(a.noise_pct, b.noise_pct) / 100.0;
  if (rel <= noise) return Verdict::same;
  return b.median_ms < a.median_ms ? Verdict::faster : Verdict::slower;
}

std::string short_sum(const std::string& s) { return s.size() > 12 ? s.substr(0, 12) : s; }

std::string devices_text(const std::vector<DeviceSummary>& devs, const std::string& note) {
  if (devs.empty()) return note.empty() ? "no GPU" : fmt::format("no GPU ({})", note);
  std::vector<std::pair<std::string, int>> groups;  // "name (cc x, N SMs)" × count, in ordinal order
  for (const auto& d : devs) {
    const std::string label = fmt::format("{} (cc {}, {} SMs)", d.name, d.compute_capability, d.sm_count);
    if (!groups.empty() && groups.back().first == label)
      ++groups.back().second;
    else
      groups.emplace_back(label, 1);
  }
  std::vector<std::string> parts;
  for (const auto& [label, count] : groups) parts.push_back(fmt::format("{}× {}", count, label));
  return join(parts, " + ");
}

bool same_devices(const RunSummary& a, const RunSummary& b) {
  if (a.devices.size() != b.devices.size()) return false;
  for (std::size_t i = 0; i < a.devices.size(); ++i) {
    const auto &x = a.devices[i], &y = b.devices[i];
    if (x.name != y.name || x.compute_capability != y.compute_capability || x.sm_count != y.sm_count || x.memory_bytes != y.memory_bytes) return false;
  }
  return true;
}

std::vector<std::string> header_notes(const RunSummary& a, const RunSummary& b) {
  std::vector<std::string> notes;
  if (!same_devices(a, b))
    notes.push_back(fmt::format("Devices differ: A has {}; B has {}. Compared anyway: comparing machines is the point.", devices_text(a.devices, ""),
                                devices_text(b.devices, "")));
  if (a.cpu_model != b.cpu_model || a.cores != b.cores || a.omp_threads != b.omp_threads)
    notes.push_back(fmt::format("Hosts differ: A has {} ({} cores, {} OpenMP threads); B has {} ({} cores, {} OpenMP threads).", a.cpu_model, a.cores,
                                a.omp_threads, b.cpu_model, b.cores, b.omp_threads));
  if (a.host_memory != b.host_memory)
    notes.push_back(fmt::format("Host memory differs: A {}, B {}; transfer times are not like for like.", a.host_memory, b.host_memory));
  for (const auto* s : {&a, &b})
    if (!s->complete) notes.push_back(fmt::format("{} is an incomplete run (interrupted or still running).", s->file));
  return notes;
}

void sort_report(CompareReport& r) {
  std::sort(r.pairs.begin(), r.pairs.end(), [](const ComparedPair& x, const ComparedPair& y) {
    return x.version != y.version ? version_less(x.version, y.version) : x.case_id < y.case_id;
  });
  std::stable_sort(r.uncompared.begin(), r.uncompared.end(), [](const UncomparedEntry& x, const UncomparedEntry& y) {
    if (x.version != y.version) return version_less(x.version, y.version);
    return x.case_id != y.case_id ? x.case_id < y.case_id : int(x.kind) < int(y.kind);
  });
}

// ---------------------------------------------------------------- printing

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / 1073741824.0); }

std::string fmt_p(const std::optional<double>& p) {
  if (!p || std::isnan(*p)) return "-";
  return *p < 0.001 ? "<0.001" : fmt::format("{:.3f}", *p);
}

std::string fmt_ratio(double r) { return std::isfinite(r) ? fmt::format("{:.3f}", r) : "-"; }

std::string fmt_noise(double n) { return std::isfinite(n) ? fmt::format("{:.1f}%", n) : "-"; }

// Columns aligned for the terminal, or a markdown pipe table. right[i]: right-align column i.
std::string render_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right, bool markdown) {
  std::string out;
  if (rows.empty()) return out;
  if (markdown) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out += "|";
      for (const auto& c : rows[i]) {
        std::string cell;
        for (char ch : c) cell += ch == '|' ? std::string("\\|") : std::string(1, ch);
        out += " " + cell + " |";
      }
      out += "\n";
      if (i == 0) {
        out += "|";
        for (std::size_t j = 0; j < rows[i].size(); ++j) out += right[j] ? " ---: |" : " --- |";
        out += "\n";
      }
    }
    return out;
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t j = 0; j < row.size(); ++j) width[j] = std::max(width[j], row[j].size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t j = 0; j < row.size(); ++j) {
      if (j) line += "  ";
      line += right[j] ? fmt::format("{:>{}}", row[j], width[j]) : fmt::format("{:<{}}", row[j], width[j]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string summary_block(const char* label, const RunSummary& s, bool markdown) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("run: knnbench {} (git {}, {} build){}{}, {}{}", s.knnbench_version, s.git_sha, s.build_type,
                              s.cuda_runtime.empty() ? "" : ", CUDA runtime " + s.cuda_runtime,
                              s.cuda_driver.empty() ? "" : ", driver " + s.cuda_driver, s.date_utc, s.complete ? "" : ", INCOMPLETE"));
  lines.push_back(fmt::format("host: {}, {}, {} cores, {}, {} OpenMP threads, {}{}", s.hostname, s.cpu_model, s.cores, gib(s.memory_bytes),
                              s.omp_threads, s.os, s.host_memory.empty() ? "" : ", host memory " + s.host_memory));
  if (s.devices.empty()) lines.push_back(fmt::format("devices: none{}", s.device_note.empty() ? "" : "; " + s.device_note));
  for (const auto& d : s.devices)
    lines.push_back(fmt::format("device {}: {}, cc {}, {} SMs, {}", d.ordinal, d.name, d.compute_capability, d.sm_count, gib(d.memory_bytes)));
  std::string out = markdown ? fmt::format("**{}**: `{}`\n\n", label, s.file) : fmt::format("{}: {}\n", label, s.file);
  for (const auto& l : lines) out += markdown ? fmt::format("- {}\n", l) : fmt::format("   {}\n", l);
  return out + (markdown ? "\n" : "");
}

}  // namespace

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::same: return "SAME";
    case Verdict::faster: return "FASTER";
    case Verdict::slower: return "SLOWER";
    case Verdict::unknown: return "????";
  }
  return "?";
}

// ---------------------------------------------------------------- Mann–Whitney U

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t na = a.size(), nb = b.size(), n = na + nb;
  if (na == 0 || nb == 0) return kNaN;
  std::vector<std::pair<double, bool>> all;  // value, from a
  all.reserve(n);
  for (double x : a) all.emplace_back(x, true);
  for (double x : b) all.emplace_back(x, false);
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum_a = 0, tie_term = 0;  // tie_term = Σ (t³ − t) over groups of equal values
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double t = double(j - i), mid_rank = 0.5 * double(i + 1 + j);  // ranks i+1 .. j
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum_a += mid_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  const double u_a = rank_sum_a - 0.5 * double(na) * double(na + 1);
  const double u_b = double(na) * double(nb) - u_a;
  const double u_min = std::min(u_a, u_b);

  if (tie_term == 0 && na * nb <= 400) {
    // Exact: count[i][j][u] = orderings of i a's and j b's with U = u (U counts pairs a > b).
    // The largest element is an a (beating all j b's) or a b.
    const std::size_t umax = na * nb;
    std::vector<std::vector<std::vector<double>>> count(na + 1, std::vector<std::vector<double>>(nb + 1, std::vector<double>(umax + 1, 0)));
    for (std::size_t i = 0; i <= na; ++i)
      for (std::size_t j = 0; j <= nb; ++j) {
        if (i == 0 || j == 0) {
          count[i][j][0] = 1;
          continue;
        }
        for (std::size_t u = 0; u <= i * j; ++u) count[i][j][u] = (u >= j ? count[i - 1][j][u - j] : 0) + count[i][j - 1][u];
      }
    const auto& dist = count[na][nb];
    const double total = std::accumulate(dist.begin(), dist.end(), 0.0);
    double tail = 0;
    for (std::size_t u = 0; double(u) <= u_min + 1e-9; ++u) tail += dist[u];
    return std::min(1.0, 2.0 * tail / total);
  }

  const double mean = 0.5 * double(na) * double(nb);
  const double var = double(na) * double(nb) / 12.0 * ((double(n) + 1) - tie_term / (double(n) * double(n - 1)));
  if (!(var > 0)) return 1.0;  // every value equal
  const double z = std::max(0.0, std::abs(u_a - mean) - 0.5) / std::sqrt(var);  // continuity correction
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

// ---------------------------------------------------------------- comparing

CompareReport compare_documents(const json& doc_a, const json& doc_b, const CompareOptions& opts) {
  const std::string file_a = opts.file_a.empty() ? "A" : opts.file_a, file_b = opts.file_b.empty() ? "B" : opts.file_b;
  if (!(opts.threshold_pct >= 0)) throw CompareError(fmt::format("--threshold {}: expected a percentage >= 0", opts.threshold_pct));
  const std::vector<Entry> all_a = read_entries(doc_a, file_a), all_b = read_entries(doc_b, file_b);
  const Filter filter = make_filter(opts, all_a, all_b);

  CompareReport rep;
  rep.a = read_summary(doc_a, file_a);
  rep.b = read_summary(doc_b, file_b);
  rep.notes = header_notes(rep.a, rep.b);
  rep.threshold_pct = opts.threshold_pct;

  // A result appearing twice in one file: the first is used, the others are said.
  auto index = [&rep](const std::vector<Entry>& all, const std::string& file, const Filter& f) {
    std::vector<const Entry*> kept;
    std::map<std::string, const Entry*> by_key;
    for (const auto& e : all) {
      if (!f.keep(e)) continue;
      if (!by_key.emplace(e.key(), &e).second) {
        rep.notes.push_back(fmt::format("{} holds {} case {} more than once; the first is used.", file, e.version, e.case_id));
        continue;
      }
      kept.push_back(&e);
    }
    return std::make_pair(kept, by_key);
  };
  const auto [kept_a, by_key_a] = index(all_a, file_a, filter);
  const auto [kept_b, by_key_b] = index(all_b, file_b, filter);

  std::set<const Entry*> paired_a;
  std::vector<std::pair<const Entry*, const Entry*>> pairs;
  std::vector<const Entry*> left_b;
  for (const Entry* eb : kept_b) {
    const auto it = by_key_a.find(eb->key());
    if (it == by_key_a.end()) {
      left_b.push_back(eb);
      continue;
    }
    pairs.emplace_back(it->second, eb);
    paired_a.insert(it->second);
  }
  std::vector<const Entry*> left_a;
  for (const Entry* ea : kept_a)
    if (!paired_a.count(ea)) left_a.push_back(ea);

  // Same case id and version but other parameters: other inputs, so refused rather than "only in".
  for (auto ia = left_a.begin(); ia != left_a.end();) {
    const auto ib = std::find_if(left_b.begin(), left_b.end(), [&](const Entry* eb) { return eb->version == (*ia)->version && eb->case_id == (*ia)->case_id; });
    if (ib == left_b.end()) {
      ++ia;
      continue;
    }
    rep.uncompared.push_back({NotCompared::refused, (*ia)->case_id, (*ia)->version,
                              fmt::format("refused: different case parameters (A: {}; B: {}); different inputs are not comparable", (*ia)->params,
                                          (*ib)->params)});
    left_b.erase(ib);
    ia = left_a.erase(ia);
  }
  for (const Entry* e : left_a) rep.uncompared.push_back({NotCompared::only_in_a, e->case_id, e->version, fmt::format("only in A ({}, {})", e->params, e->status)});
  for (const Entry* e : left_b) rep.uncompared.push_back({NotCompared::only_in_b, e->case_id, e->version, fmt::format("only in B ({}, {})", e->params, e->status)});

  for (const auto& [ea, eb] : pairs) {
    if (ea->query_checksum != eb->query_checksum || ea->reference_checksum != eb->reference_checksum) {
      std::vector<std::string> diff;
      if (ea->query_checksum != eb->query_checksum)
        diff.push_back(fmt::format("queries {} vs {}", short_sum(ea->query_checksum), short_sum(eb->query_checksum)));
      if (ea->reference_checksum != eb->reference_checksum)
        diff.push_back(fmt::format("references {} vs {}", short_sum(ea->reference_checksum), short_sum(eb->reference_checksum)));
      rep.uncompared.push_back({NotCompared::refused, ea->case_id, ea->version,
                                fmt::format("refused: input checksums differ ({}); different inputs are not comparable", join(diff))});
      continue;
    }
    if (ea->status != "pass" || eb->status != "pass") {
      auto side = [](const Entry* e) { return e->status + (e->status != "pass" && !e->reason.empty() ? " (" + e->reason + ")" : ""); };
      rep.uncompared.push_back({NotCompared::status, ea->case_id, ea->version, fmt::format("A {}, B {}", side(ea), side(eb))});
      continue;
    }
    ComparedPair p;
    p.case_id = ea->case_id;
    p.version = ea->version;
    p.params = ea->params;
    p.a_median_ms = ea->median_ms;
    p.a_noise_pct = ea->noise_pct;
    p.a_samples = ea->samples;
    p.b_median_ms = eb->median_ms;
    p.b_noise_pct = eb->noise_pct;
    p.b_samples = eb->samples;
    p.ratio = ea->median_ms > 0 && std::isfinite(eb->median_ms) ? eb->median_ms / ea->median_ms : kNaN;
    if (ea->has_raw && eb->has_raw && ea->raw_ms.size() >= std::size_t(kMinSamples) && eb->raw_ms.size() >= std::size_t(kMinSamples))
      p.p_value = mann_whitney_p(ea->raw_ms, eb->raw_ms);
    p.verdict = judge(*ea, *eb);
    p.hidden = opts.threshold_pct > 0 && std::isfinite(p.ratio) && std::abs(p.ratio - 1) * 100 < opts.threshold_pct;
    rep.pairs.push_back(p);
  }
  sort_report(rep);

  for (const auto& p : rep.pairs) {
    if (p.hidden) ++rep.hidden;
    if (p.verdict == Verdict::slower) ++(p.hidden ? rep.hidden_slower : rep.slower);
    if (rep.geomeans.empty() || rep.geomeans.back().version != p.version) rep.geomeans.push_back({p.version});
    VersionGeomean& g = rep.geomeans.back();
    switch (p.verdict) {
      case Verdict::same: ++g.same; break;
      case Verdict::faster: ++g.faster; break;
      case Verdict::slower: ++g.slower; break;
      case Verdict::unknown: ++g.unknown; break;
    }
    if (std::isfinite(p.ratio) && p.ratio > 0) {
      g.geomean += std::log(p.ratio);  // a sum of logs until the end
      ++g.pairs;
    }
  }
  for (auto& g : rep.geomeans) g.geomean = g.pairs ? std::exp(g.geomean / g.pairs) : kNaN;
  return rep;
}

std::string format_compare(const CompareReport& rep, bool md) {
  std::string out = md ? "## knnbench compare: B against A\n\n" : "knnbench compare: B against A\n\n";
  out += summary_block("A", rep.a, md);
  out += summary_block("B", rep.b, md);
  if (!rep.notes.empty()) {
    std::vector<std::string> notes;
    for (const auto& n : rep.notes) notes.push_back((md ? "> **Note:** " : "NOTE: ") + n);
    out += md ? join(notes, "\n>\n") + "\n" : "\n" + join(notes, "\n") + "\n";
  }
  out += "\n";

  std::vector<std::vector<std::string>> rows{{"version", "case", "A median ms", "A noise", "B median ms", "B noise", "samples A/B", "B/A", "verdict", "p"}};
  for (const auto& p : rep.pairs) {
    if (p.hidden) continue;
    rows.push_back({p.version, std::to_string(p.case_id), format_ms(p.a_median_ms), fmt_noise(p.a_noise_pct), format_ms(p.b_median_ms),
                    fmt_noise(p.b_noise_pct), fmt::format("{}/{}", p.a_samples, p.b_samples), fmt_ratio(p.ratio),
                    md && p.verdict != Verdict::same ? fmt::format("**{}**", to_string(p.verdict)) : to_string(p.verdict), fmt_p(p.p_value)});
  }
  const std::vector<bool> right{false, true, true, true, true, true, true, true, false, true};
  if (rows.size() > 1)
    out += render_table(rows, right, md);
  else
    out += rep.pairs.empty() ? "No pair to compare.\n" : "Every pair is within --threshold.\n";
  if (!rep.pairs.empty())
    out += fmt::format(
        "{}SAME: |B-A|/A within the larger noise (relative stdev); FASTER/SLOWER otherwise; ????: under {} samples on a side.{}"
        "p: two-sided Mann-Whitney U test on the raw samples (-: not kept, or under {}).\n",
        md ? "\n" : "", kMinSamples, md ? " " : "\n", kMinSamples);
  if (rep.hidden)
    out += fmt::format("{} pair{} within --threshold {}% hidden (still in the geomean, not in the exit code).\n", rep.hidden, rep.hidden == 1 ? "" : "s",
                       rep.threshold_pct);

  if (!rep.uncompared.empty()) {
    out += md ? fmt::format("\n### Not compared ({})\n\n", rep.uncompared.size()) : fmt::format("\nNot compared ({}):\n", rep.uncompared.size());
    std::vector<std::vector<std::string>> nrows{{"version", "case", "why"}};
    for (const auto& u : rep.uncompared) nrows.push_back({u.version, std::to_string(u.case_id), u.detail});
    if (md)
      out += render_table(nrows, {false, true, false}, true);
    else {
      nrows.erase(nrows.begin());
      for (auto& r : nrows) r.insert(r.begin(), "");
      out += render_table(nrows, {false, false, true, false}, false);
    }
  }

  if (!rep.geomeans.empty()) {
    out += md ? "\n### Geometric mean of B/A per version\n\n" : "\nGeometric mean of B/A per version:\n";
    std::vector<std::vector<std::string>> grows{{"version", "pairs", "geomean B/A", "FASTER", "SAME", "SLOWER", "????"}};
    for (const auto& g : rep.geomeans)
      grows.push_back({g.version, std::to_string(g.pairs), fmt_ratio(g.geomean), std::to_string(g.faster), std::to_string(g.same),
                       std::to_string(g.slower), std::to_string(g.unknown)});
    out += render_table(grows, {false, true, true, true, true, true, true}, md);
  }

  out += fmt::format("\n{} SLOWER verdict{}{}: exit code {}.\n", rep.slower, rep.slower == 1 ? "" : "s",
                     rep.hidden_slower ? fmt::format(" ({} more within --threshold, not counted)", rep.hidden_slower) : "", rep.exit_code());
  return out;
}

json load_results_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) bad(path, "no such file");
  if (fs::is_directory(path, ec)) bad(path, "is a directory, expected a knnbench results JSON file");
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, fmt::format("cannot open: {}", std::strerror(errno)));
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) bad(path, "read error");
  const std::string text = buf.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) bad(path, "empty file, expected a knnbench results JSON");
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    const auto close = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
    if (what.rfind("[json.exception", 0) == 0 && close != std::string::npos) what = what.substr(close + 2);
    std::replace(what.begin(), what.end(), '\n', ' ');
    bad(path, "not valid JSON: " + what);
  }
}

int run_compare(const CompareOptions& opts) {
  try {
    if (opts.file_a.empty() || opts.file_b.empty()) throw CompareError("needs two results files: knnbench compare A.json B.json");
    const json a = load_results_file(opts.file_a);
    const json b = load_results_file(opts.file_b);
    const CompareReport rep = compare_documents(a, b, opts);
    fmt::print("{}", format_compare(rep, opts.markdown));
    std::fflush(stdout);
    return rep.exit_code();
  } catch (const CompareError& e) {
    fmt::print(stderr, "knnbench compare: {}\n", e.what());
  } catch (const std::exception& e) {
    // Never an exit code in 1..125: those count SLOWER verdicts.
    fmt::print(stderr, "knnbench compare: internal error: {}\n", e.what());
  }
  return kCompareExitUsage;
}

CLI::App* add_compare_subcommand(CLI::App& app, CompareOptions& opts) {
  CLI::App* sub = app.add_subcommand("compare",
                                     "Compare two results files: each (case, version) of B against A.\n"
                                     "Pairs match on case id, case parameters, version and input checksums.");
  sub->add_option("A", opts.file_a, "Results JSON A, the baseline (e.g. results/h100/default.json)");
  sub->add_option("B", opts.file_b, "Results JSON B, judged against A (e.g. results/local/<host>-<utc>.json)");
  sub->add_option("--threshold", opts.threshold_pct,
                  "Hide pairs whose |B/A - 1| is under PCT percent; they still count in the geomean, not in the exit code")
      ->type_name("PCT");
  sub->add_option("--version", opts.versions, "Versions to compare: v3, or lists like v1,v3 (repeatable; default all)")->delimiter(',');
  sub->add_option("--case", opts.cases, "Case ids: 11, ranges like 8-11, or lists (repeatable; default all)")->delimiter(',');
  sub->add_flag("--md", opts.markdown, "Print the report as markdown, for pasting into reports");
  sub->footer(
      "Verdicts: SAME when |B-A|/A is within the larger of the two noises (relative stdev), else FASTER or SLOWER;\n"
      "???? when a side has fewer than 3 samples. p is a two-sided Mann-Whitney U test on the raw samples.\n"
      "Results whose input checksums differ are refused; skipped or failed ones are listed, not compared.\n\n"
      "Exit codes (compare): 0 no SLOWER verdict; 1-125 the number of SLOWER verdicts (capped at 125);\n"
      "126 a usage error (missing or invalid file, wrong schema_version, bad flag), with a one-line message.\n\n"
      "Example: knnbench compare results/h100/default.json results/local/mybox.json --version v3,v8 --case 8-11");
  return sub;
}

}  // namespace knn
