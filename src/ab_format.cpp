// `knnbench ab`'s report: the table (text or markdown, through text_table as compare's) and the JSON
// with every process's median.
#include <fmt/format.h>

#include <cmath>

#include "ab.hpp"
#include "report.hpp"  // format_ms
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
  j["modes"] = nlohmann::ordered_json::array();
  for (const AbMode& m : modes) j["modes"].push_back({{"median_ms", m.median_ms}, {"count", m.members.size()}, {"processes", m.members}});
  return j;
}

}  // namespace

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
  out += fmt::format("{}{} rounds (A B, then B A, ...), {} dropped\n", md ? "- " : "", rep.rounds_run + rep.rounds_dropped, rep.rounds_dropped);
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
    if (j.within_modes)
      mode_lines.push_back(fmt::format("{} case {}: A {}; B {}; judged within modes over {}/{} processes", r.label, r.case_id,
                                       modes_text(j.a_modes), modes_text(j.b_modes), j.a_used, j.b_used));
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
    row["processes_used"] = {x.a_used, x.b_used};
    row["verdict"] = to_string(x.verdict);
    j["rows"].push_back(row);
  }
  j["slower"] = rep.slower();
  j["exit_code"] = rep.exit_code();
  return j;
}

}  // namespace knn
