// `knnbench ab`'s report: the table (text or markdown, through text_table as compare's) and the JSON
// with every process's median.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <tuple>

#include "ab.hpp"
#include "report.hpp"  // format_ms
#include "stats.hpp"   // median_of
#include "text_table.hpp"

namespace knn {
namespace {

std::string number(double x, const char* spec) { return std::isfinite(x) ? fmt::format(fmt::runtime(spec), x) : "-"; }

std::string modes_text(const std::vector<AbMode>& modes) {
  if (modes.size() < 2) return "one mode";
  std::string s = "bimodal:";
  for (const AbMode& m : modes) s += fmt::format(" {} at {} ms", m.members.size(), format_ms(m.median_ms));
  return s;
}

nlohmann::ordered_json side_json(const AbSide& s, const std::vector<AbMode>& modes) {
  nlohmann::ordered_json j;
  j["medians_ms"] = s.medians_ms;
  j["rounds"] = s.rounds;
  j["hosts"] = nlohmann::ordered_json::array();
  for (const AbHost& h : s.hosts)
    j["hosts"].push_back({{"canary_cpu_ms", h.canary_cpu_ms}, {"canary_mem_gbps", h.canary_mem_gbps}, {"input_numa_node", h.numa_node},
                          {"input_anon_huge_kb", h.huge_kb}, {"cpus", h.cpus}, {"cpu_mhz", h.cpu_mhz},
                          {"steal_pct", h.steal_pct}, {"involuntary_switches", h.switches}});
  j["modes"] = nlohmann::ordered_json::array();
  for (const AbMode& m : modes) j["modes"].push_back({{"median_ms", m.median_ms}, {"count", m.members.size()}, {"processes", m.members}});
  return j;
}

// The values `get` gives for the processes `members` (those with the value recorded: `valid`).
template <class T, class Get, class Valid>
std::vector<T> values_of(const AbSide& s, const std::vector<int>& members, Get get, Valid valid) {
  std::vector<T> out;
  for (int i : members)
    if (valid(s.hosts[std::size_t(i)])) out.push_back(get(s.hosts[std::size_t(i)]));
  return out;
}

// "canary CPU loop 1.82x slower in the slow mode (ranges apart)", "" when a mode has no reading.
std::string canary_part(std::vector<double> fast, std::vector<double> slow, bool higher_is_slow, const char* what, double min_effect,
                        bool& separates) {
  if (fast.empty() || slow.empty()) return "";
  const double f = median_of(fast), sl = median_of(slow);
  const double ratio = higher_is_slow ? sl / f : f / sl;
  const auto [fmin, fmax] = std::minmax_element(fast.begin(), fast.end());
  const auto [smin, smax] = std::minmax_element(slow.begin(), slow.end());
  const bool apart = higher_is_slow ? *fmax < *smin : *fmin > *smax;
  const bool sep = ratio > 1 + min_effect / 100 && apart;
  separates = separates || sep;
  return fmt::format("{} {:.2f}x slower in the slow mode{}", what, ratio, apart ? " (ranges apart)" : " (ranges overlap)");
}

// "steal 0.1 % in the fast mode, 4.2 % in the slow (ranges apart)", "" when a mode has no reading.
std::string level_part(const std::vector<double>& fast, const std::vector<double>& slow, const char* what, const char* unit,
                       bool& separates) {
  if (fast.empty() || slow.empty()) return "";
  const double fmax = *std::max_element(fast.begin(), fast.end()), smin = *std::min_element(slow.begin(), slow.end());
  const bool apart = smin > fmax;
  separates = separates || apart;
  return fmt::format("{} {:.3g}{} in the fast mode, {:.3g}{} in the slow{}", what, median_of(fast), unit, median_of(slow), unit,
                     apart ? " (ranges apart)" : "");
}

// "NUMA node 0 in the fast mode, 1 in the slow", "NUMA node 0 in both", "" when not recorded.
std::string fact_part(const std::vector<std::string>& fast, const std::vector<std::string>& slow, const char* what, bool& separates) {
  if (fast.empty() || slow.empty()) return "";
  const std::set<std::string> f(fast.begin(), fast.end()), sl(slow.begin(), slow.end());
  const auto join = [](const std::set<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : " or ") + x;
    return out;
  };
  if (f == sl) return fmt::format("{} {} in both", what, join(f));
  std::vector<std::string> common;
  std::set_intersection(f.begin(), f.end(), sl.begin(), sl.end(), std::back_inserter(common));
  separates = separates || common.empty();
  return fmt::format("{} {} in the fast mode, {} in the slow", what, join(f), join(sl));
}

}  // namespace

std::string explain_modes(const AbSide& s, const std::vector<AbMode>& modes, double min_effect_pct) {
  if (modes.size() < 2 || s.hosts.size() != s.medians_ms.size()) return "";
  const std::vector<int>& fast = modes.front().members;
  const std::vector<int>& slow = modes.back().members;
  const auto canary = [](const AbHost& h) { return h.canary_cpu_ms > 0; };
  const auto facts = [](const AbHost& h) { return !h.numa_node.empty(); };
  bool separates = false;
  std::vector<std::string> parts;
  const auto add = [&](std::string p) {
    if (!p.empty()) parts.push_back(std::move(p));
  };
  const auto cpu = [](const AbHost& h) { return h.canary_cpu_ms; };
  const auto mem = [](const AbHost& h) { return h.canary_mem_gbps; };
  add(canary_part(values_of<double>(s, fast, cpu, canary), values_of<double>(s, slow, cpu, canary), true, "canary CPU loop",
                  min_effect_pct, separates));
  add(canary_part(values_of<double>(s, fast, mem, canary), values_of<double>(s, slow, mem, canary), false, "canary memory probe",
                  min_effect_pct, separates));
  const auto steal = [](const AbHost& h) { return h.steal_pct; };
  const auto steal_known = [](const AbHost& h) { return h.steal_pct >= 0; };
  add(level_part(values_of<double>(s, fast, steal, steal_known), values_of<double>(s, slow, steal, steal_known), "steal time", " %",
                 separates));
  const auto sw = [](const AbHost& h) { return double(h.switches); };
  const auto sw_known = [](const AbHost& h) { return h.switches >= 0; };
  add(level_part(values_of<double>(s, fast, sw, sw_known), values_of<double>(s, slow, sw, sw_known), "involuntary switches", "",
                 separates));
  const auto numa = [](const AbHost& h) { return h.numa_node; };
  const auto huge = [](const AbHost& h) { return std::string(h.huge_kb > 0 ? "yes" : "no"); };
  const auto known_huge = [](const AbHost& h) { return !h.numa_node.empty() && h.huge_kb >= 0; };
  const auto cpus = [](const AbHost& h) { return h.cpus; };
  add(fact_part(values_of<std::string>(s, fast, numa, facts), values_of<std::string>(s, slow, numa, facts), "inputs' NUMA node",
                separates));
  add(fact_part(values_of<std::string>(s, fast, huge, known_huge), values_of<std::string>(s, slow, huge, known_huge),
                "inputs' huge pages", separates));
  add(fact_part(values_of<std::string>(s, fast, cpus, facts), values_of<std::string>(s, slow, cpus, facts), "CPUs", separates));
  if (parts.empty()) return "";
  std::string out = separates ? "the slow mode goes with what the host recorded: " : "nothing recorded separates the modes: ";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out;
}

int AbReport::slower() const {
  int n = 0;
  for (const AbRow& r : rows) n += r.j.verdict == Verdict::slower;
  return n;
}

int AbReport::exit_code() const {
  if (rows.empty()) return kCompareExitNothingCompared;
  return slower() > 0 ? kCompareExitSlower : kExitOk;
}

std::string format_ab(const AbReport& rep, bool md) {
  std::string out = md ? "## knnbench ab: B against A, in alternating processes\n\n" : "knnbench ab: B against A, in alternating processes\n\n";
  out += fmt::format(md ? "- A: `{}`\n- B: `{}`\n" : "A: {}\nB: {}\n", rep.side_a, rep.side_b);
  out += rep.paired ? fmt::format("{}{} processes, each with both settings (A's first, then B's first, ...), {} dropped; paired: each process's "
                                  "B/A is one observation (signed-rank test)\n", md ? "- " : "", rep.rounds_run + rep.rounds_dropped, rep.rounds_dropped)
                    : fmt::format("{}{} rounds (A B, then B A, ...), {} dropped\n", md ? "- " : "", rep.rounds_run + rep.rounds_dropped, rep.rounds_dropped);
  for (const auto& n : rep.notes) out += (md ? "\n> **Note:** " : "NOTE: ") + n + "\n";
  out += "\n";
  const CompareOptions& o = rep.rule;
  const std::string level = fmt::format("{:g}%", 100 * (1 - o.alpha));
  TableRows rows{{"version", "case", "A ms", "B ms", "processes", "B/A", level + " interval", "p", "modes", "verdict"}};
  std::vector<std::string> mode_lines;
  for (const AbRow& r : rep.rows) {
    const AbJudgement& j = r.j;
    const std::string verdict = md && j.verdict != Verdict::same ? fmt::format("**{}**", to_string(j.verdict))
                                : j.verdict == Verdict::too_few ? "too few" : to_string(j.verdict);
    const std::string p = !j.p_value || std::isnan(*j.p_value) ? "-" : *j.p_value < 0.001 ? "<0.001" : fmt::format("{:.3f}", *j.p_value);
    rows.push_back({r.label, std::to_string(r.case_id), format_ms(j.a_median_ms), format_ms(j.b_median_ms),
                    fmt::format("{}/{}", r.a.medians_ms.size(), r.b.medians_ms.size()), number(j.ratio, "{:.3f}") + (j.within_modes ? "*" : ""),
                    fmt::format("{}-{}", number(j.ratio_interval.low, "{:.3f}"), number(j.ratio_interval.high, "{:.3f}")), p,
                    fmt::format("{}/{}", j.a_modes.size(), j.b_modes.size()), verdict});
    if (j.within_modes) {
      mode_lines.push_back(fmt::format("{} case {}: A {}; B {}; judged within modes over {}/{} processes", r.label, r.case_id,
                                       modes_text(j.a_modes), modes_text(j.b_modes), j.a_used, j.b_used));
      for (const auto& [name, side, modes] : {std::tuple{'A', &r.a, &j.a_modes}, std::tuple{'B', &r.b, &j.b_modes}}) {
        const std::string why = explain_modes(*side, *modes, o.min_effect_pct);
        if (!why.empty()) mode_lines.push_back(fmt::format("  side {}: {}", name, why));
      }
    }
  }
  if (rep.rows.empty()) return out + fmt::format("Nothing compared: no (case, version) timed on both sides: exit code {}.\n", rep.exit_code());
  out += md ? markdown_table(rows, label_then_numbers(rows[0].size())) : text_table(rows, label_then_numbers(rows[0].size()));
  if (!mode_lines.empty()) {
    out += md ? "\n### Modes\n\n" : "\nModes (* above: B/A within modes):\n";
    for (const auto& l : mode_lines) out += (md ? "- " : "  ") + l + "\n";
  }
  out += fmt::format(
      "\nA ms, B ms: each side's median of its processes' medians (each process is one observation). processes, modes: A/B. B/A: the ratio of those. SLOWER/FASTER: B/A moved by more "
      "than {}% (--threshold) and {} ms (--min-change), p < {} (--alpha: Mann-Whitney across processes) and the interval excludes 1; "
      "SAME otherwise. interval: of B/A (Moses, from the pairwise ratios of processes). A bimodal side (two levels of processes, "
      "docs/measurement.md) is judged within modes.\n",
      o.min_effect_pct, o.min_change_ms, o.alpha);
  if (rep.paired)
    out += "Paired: each process's B/A is the median of its interleaved samples' ratios B_i/A_i (neighbouring calls), or the ratio of "
           "its two medians where its settings were not interleaved (--no-interleave); the test is the signed-rank test on these ratios, "
           "the interval that of their Walsh averages.\n";
  out += fmt::format("\n{} SLOWER verdict{}: exit code {}.\n", rep.slower(), rep.slower() == 1 ? "" : "s", rep.exit_code());
  return out;
}

nlohmann::ordered_json ab_to_json(const AbReport& rep) {
  nlohmann::ordered_json j;
  j["tool"] = "knnbench ab";
  j["a"] = rep.side_a;
  j["b"] = rep.side_b;
  j["rule"] = {{"min_effect_pct", rep.rule.min_effect_pct}, {"min_change_ms", rep.rule.min_change_ms}, {"alpha", rep.rule.alpha},
               {"mode_gap_factor", kAbModeGapFactor}, {"mode_min_count", kAbModeMinCount}};
  j["paired"] = rep.paired;
  j["rounds_run"] = rep.rounds_run;
  j["rounds_dropped"] = rep.rounds_dropped;
  j["notes"] = rep.notes;
  j["rows"] = nlohmann::ordered_json::array();
  for (const AbRow& r : rep.rows) {
    const AbJudgement& x = r.j;
    nlohmann::ordered_json row;
    row["case"] = r.case_id;
    row["version"] = r.label;
    row["case_params"] = r.params;
    row["a"] = side_json(r.a, x.a_modes);
    row["b"] = side_json(r.b, x.b_modes);
    row["a_median_ms"] = x.a_median_ms;
    row["b_median_ms"] = x.b_median_ms;
    row["ratio"] = x.ratio;
    row["interval"] = {{"low", x.ratio_interval.low}, {"high", x.ratio_interval.high}, {"coverage", x.ratio_interval.coverage}};
    row["p"] = x.p_value ? nlohmann::ordered_json(*x.p_value) : nlohmann::ordered_json(nullptr);
    row["within_modes"] = x.within_modes;
    row["a_modes_explained"] = explain_modes(r.a, x.a_modes, rep.rule.min_effect_pct);
    row["b_modes_explained"] = explain_modes(r.b, x.b_modes, rep.rule.min_effect_pct);
    row["processes_used"] = {x.a_used, x.b_used};
    if (rep.paired) {  // the observations of the signed-rank test, one per process
      row["process_ratios"] = x.process_ratios;
      row["process_ratio_of"] = x.ratios_of_samples ? "interleaved samples" : "medians";
    }
    row["verdict"] = to_string(x.verdict);
    j["rows"].push_back(row);
  }
  j["slower"] = rep.slower();
  j["exit_code"] = rep.exit_code();
  return j;
}

}  // namespace knn
