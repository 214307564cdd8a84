// The canary's fields in a results file: writer and strict reader (results_schema_canary.hpp).
#include "results_schema_canary.hpp"

#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <initializer_list>

#include "results_schema.hpp"

namespace knn {
namespace {

using json = nlohmann::json;

void only(const json& obj, const std::string& where, std::initializer_list<const char*> known, const SchemaFail& fail) {
  if (!obj.is_object()) fail(where, fmt::format("{}, expected an object", shown_json(obj)));
  refuse_unknown_fields(obj, where, known, fail);
}

// A canary's reading: a finite number > 0, required once the object is there.
double positive(const json& obj, const char* key, const std::string& where, const SchemaFail& fail) {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(where + "." + key, "missing");
  if (!it->is_number() || !std::isfinite(it->get<double>()) || !(it->get<double>() > 0))
    fail(where + "." + key, fmt::format("{}, expected a finite number > 0", shown_json(*it)));
  return it->get<double>();
}

// CPU numbers: an array of integers >= 0.
std::vector<int> cpus_of(const json& v, const std::string& where, const SchemaFail& fail) {
  std::vector<int> out;
  if (!v.is_array()) fail(where, fmt::format("{}, expected an array of CPU numbers", shown_json(v)));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const json& x = v[i];
    if (!x.is_number_integer() || x.get<long long>() < 0 || x.get<long long>() > INT_MAX)
      fail(fmt::format("{}[{}]", where, i), fmt::format("{}, expected a CPU number >= 0", shown_json(x)));
    out.push_back(int(x.get<long long>()));
  }
  return out;
}

// A short word written raw into tables: no control character, at most 64 characters.
std::string word(const json& v, const std::string& where, const SchemaFail& fail) {
  if (!v.is_string()) fail(where, fmt::format("{}, expected a string", shown_json(v)));
  const std::string s = v.get<std::string>();
  bool control = false;
  for (const char ch : s) control = control || static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
  if (s.empty() || s.size() > 64 || control) fail(where, fmt::format("{}, expected a short text (no control character)", shown_json(v)));
  return s;
}

void read_facts(const json& f, const std::string& w, ResultHostFacts& out, const SchemaFail& fail) {
  only(f, w, {"input_numa_node", "input_anon_huge_kb", "cpus", "cpu_mhz", "steal_pct", "involuntary_switches"}, fail);
  const auto node = f.find("input_numa_node");
  if (node == f.end()) fail(w + ".input_numa_node", "missing");
  out.input_numa_node = word(*node, w + ".input_numa_node", fail);
  if (out.input_numa_node != "unknown" && out.input_numa_node.find_first_not_of("0123456789,") != std::string::npos)
    fail(w + ".input_numa_node", fmt::format("{}, expected node numbers (\"0\", \"0,1\") or \"unknown\"", shown_json(*node)));
  if (const auto kb = f.find("input_anon_huge_kb"); kb != f.end() && !kb->is_null()) {
    if (!kb->is_number_integer() || kb->get<long long>() < 0)
      fail(w + ".input_anon_huge_kb", fmt::format("{}, expected kB >= 0 or null (unreadable)", shown_json(*kb)));
    out.input_anon_huge_kb = kb->get<long long>();
  }
  if (const auto c = f.find("cpus"); c != f.end()) out.cpus = cpus_of(*c, w + ".cpus", fail);
  if (const auto mhz = f.find("cpu_mhz"); mhz != f.end() && !mhz->is_null()) {
    if (!mhz->is_number() || !std::isfinite(mhz->get<double>()) || !(mhz->get<double>() > 0))
      fail(w + ".cpu_mhz", fmt::format("{}, expected MHz > 0 or null (unreadable)", shown_json(*mhz)));
    out.cpu_mhz = mhz->get<double>();
  }
  // Absent in files written before they were recorded, null where unreadable.
  if (const auto st = f.find("steal_pct"); st != f.end() && !st->is_null()) {
    if (!st->is_number() || !(st->get<double>() >= 0 && st->get<double>() <= 100))
      fail(w + ".steal_pct", fmt::format("{}, expected a percentage 0-100 or null (unreadable)", shown_json(*st)));
    out.steal_pct = st->get<double>();
  }
  if (const auto sw = f.find("involuntary_switches"); sw != f.end() && !sw->is_null()) {
    if (!sw->is_number_integer() || sw->get<long long>() < 0)
      fail(w + ".involuntary_switches", fmt::format("{}, expected a count >= 0 or null (unreadable)", shown_json(*sw)));
    out.involuntary_switches = sw->get<long long>();
  }
}

}  // namespace

std::string shown_json(const json& v) {
  const std::string s = v.dump();
  return s.size() <= 60 ? s : s.substr(0, 57) + "...";
}

void refuse_unknown_fields(const json& obj, const std::string& where, std::initializer_list<const char*> known, const SchemaFail& fail) {
  for (const auto& [key, value] : obj.items()) {
    bool found = false;
    for (const char* k : known) found = found || key == k;
    if (found) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    fail(where + "." + key, fmt::format("unknown field (a knnbench result has here: {})", list));
  }
}

nlohmann::ordered_json canary_to_json(const ResultCanary& c) {
  if (!c.recorded()) return nullptr;
  return {{"cpu_ms_before", c.cpu_ms_before}, {"cpu_ms_after", c.cpu_ms_after}, {"mem_gbps_before", c.mem_gbps_before}, {"mem_gbps_after", c.mem_gbps_after}};
}

nlohmann::ordered_json result_host_facts_to_json(const ResultHostFacts& f) {
  if (!f.recorded()) return nullptr;
  return {{"input_numa_node", f.input_numa_node},
          {"input_anon_huge_kb", f.input_anon_huge_kb >= 0 ? json(f.input_anon_huge_kb) : json(nullptr)},
          {"cpus", f.cpus},
          {"cpu_mhz", f.cpu_mhz > 0 ? json(f.cpu_mhz) : json(nullptr)},
          {"steal_pct", f.steal_pct >= 0 ? json(f.steal_pct) : json(nullptr)},
          {"involuntary_switches", f.involuntary_switches >= 0 ? json(f.involuntary_switches) : json(nullptr)}};
}

nlohmann::ordered_json host_facts_to_json(const HostFacts& f) {
  if (!f.recorded()) return nullptr;
  return {{"affinity", f.affinity}, {"numa_nodes", f.numa_nodes}, {"transparent_hugepages", f.transparent_hugepages}, {"cpufreq", f.cpufreq}};
}

void read_result_canary(const json& j, const std::string& w, Result& r, const SchemaFail& fail) {
  if (const auto c = j.find("canary"); c != j.end() && !c->is_null()) {
    const std::string cw = w + ".canary";
    only(*c, cw, {"cpu_ms_before", "cpu_ms_after", "mem_gbps_before", "mem_gbps_after"}, fail);
    r.canary = ResultCanary{positive(*c, "cpu_ms_before", cw, fail), positive(*c, "cpu_ms_after", cw, fail),
                            positive(*c, "mem_gbps_before", cw, fail), positive(*c, "mem_gbps_after", cw, fail)};
  }
  if (const auto f = j.find("host_facts"); f != j.end() && !f->is_null()) read_facts(*f, w + ".host_facts", r.host_facts, fail);
}

void check_host_facts(const json& doc, const std::string& file) {
  const auto it = doc.is_object() ? doc.find("host_facts") : doc.end();
  if (!doc.is_object() || it == doc.end() || it->is_null()) return;
  const SchemaFail fail = [&file](const std::string& where, const std::string& what) { throw SchemaError(fmt::format("{}: {}: {}", file, where, what)); };
  only(*it, "host_facts", {"affinity", "numa_nodes", "transparent_hugepages", "cpufreq"}, fail);
  if (const auto a = it->find("affinity"); a != it->end()) cpus_of(*a, "host_facts.affinity", fail);
  for (const char* key : {"numa_nodes", "transparent_hugepages", "cpufreq"})
    if (const auto t = it->find(key); t != it->end()) word(*t, std::string("host_facts.") + key, fail);
  if (const auto c = it->find("cpufreq"); c != it->end() && *c != "readable" && *c != "unreadable")
    fail("host_facts.cpufreq", fmt::format("{}, expected readable or unreadable", shown_json(*c)));
}

void read_host_facts(const json& doc, RunInfo& info) {
  const auto it = doc.is_object() ? doc.find("host_facts") : doc.end();
  if (!doc.is_object() || it == doc.end() || !it->is_object()) return;
  HostFacts& f = info.host_facts;
  if (const auto a = it->find("affinity"); a != it->end() && a->is_array())
    for (const json& c : *a)
      if (c.is_number_integer()) f.affinity.push_back(c.get<int>());
  f.numa_nodes = it->value("numa_nodes", "unknown");
  f.transparent_hugepages = it->value("transparent_hugepages", "unknown");
  f.cpufreq = it->value("cpufreq", "unreadable");
}

}  // namespace knn
