// `knnbench compare`'s report as text for the terminal or as markdown. Pairing and verdicts
// are compare.cpp.
#include <fmt/format.h>

#include <cmath>

#include "compare.hpp"
#include "report.hpp"  // format_ms
#include "text_table.hpp"

namespace knn {
namespace {

constexpr Align L = Align::left, R = Align::right;

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

std::string gib(double bytes) { return fmt::format("{:.1f} GiB", bytes / 1073741824.0); }

std::string fmt_p(const std::optional<double>& p) {
  if (!p || std::isnan(*p)) return "-";
  return *p < 0.001 ? "<0.001" : fmt::format("{:.3f}", *p);
}

std::string fmt_effect(double pct) { return std::isfinite(pct) ? fmt::format("{:+.1f}%", pct) : "-"; }

std::string fmt_ratio(double r) { return std::isfinite(r) ? fmt::format("{:.3f}", r) : "-"; }

std::string fmt_noise(double n) { return std::isfinite(n) ? fmt::format("{:.1f}%", n) : "-"; }

std::string render_table(const TableRows& rows, const std::vector<Align>& align, bool markdown) {
  return markdown ? markdown_table(rows, align) : text_table(rows, align);
}

// The verdict as a table cell: bold in markdown; in text "too few" (the legend spells it out), so a
// row keeps within 100 columns.
std::string verdict_cell(Verdict v, bool md) {
  if (md) return v == Verdict::same ? to_string(v) : fmt::format("**{}**", to_string(v));
  return v == Verdict::too_few ? "too few" : to_string(v);
}

std::string version_string(int v) { return v ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : ""; }

std::string summary_block(const char* label, const RunSummary& s, bool markdown) {
  const RunInfo& i = s.info;
  const RecordedBuild& b = i.recorded_build;
  const std::string runtime = version_string(i.cuda_runtime_version), driver = version_string(i.cuda_driver_version);
  std::vector<std::string> lines;
  lines.push_back(fmt::format("run: knnbench {} (git {}, {} build){}{}, {}{}", b.knnbench_version, b.git_sha, b.build_type,
                              runtime.empty() ? "" : ", CUDA runtime " + runtime, driver.empty() ? "" : ", driver " + driver, i.started_utc,
                              i.complete ? "" : ", INCOMPLETE"));
  lines.push_back(fmt::format("host: {}, {}, {} cores, {}, {} OpenMP threads, {}, host memory {}", i.host.hostname, i.host.cpu_model, i.host.cores,
                              gib(double(i.host.memory_bytes)), i.host.omp_threads, i.host.os, to_string(i.host_memory)));
  if (i.devices.empty()) lines.push_back(fmt::format("devices: none{}", i.device_note.empty() ? "" : "; " + i.device_note));
  for (const auto& d : i.devices)
    lines.push_back(fmt::format("device {}: {}, cc {}.{}, {} SMs, {}", d.ordinal, d.name, d.cc_major, d.cc_minor, d.sm_count, gib(double(d.total_memory))));
  std::string out = markdown ? fmt::format("**{}**: `{}`\n\n", label, s.file) : fmt::format("{}: {}\n", label, s.file);
  for (const auto& l : lines) out += markdown ? fmt::format("- {}\n", l) : fmt::format("   {}\n", l);
  return out + (markdown ? "\n" : "");
}

}  // namespace

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

  std::vector<std::vector<std::string>> rows{
      {"version", "case", "A median ms", "A noise", "B median ms", "B noise", "samples A/B", "effect", "p", "verdict"}};
  for (const auto& p : rep.pairs) {
    if (p.hidden) continue;
    rows.push_back({p.version, std::to_string(p.case_id), format_ms(p.a_median_ms), fmt_noise(p.a_noise_pct), format_ms(p.b_median_ms),
                    fmt_noise(p.b_noise_pct), fmt::format("{}/{}", p.a_samples, p.b_samples), fmt_effect(p.effect_pct()), fmt_p(p.p_value),
                    p.verdict == Verdict::host_drift && p.host_ratio > 0 ? fmt::format("{} x{:.2f}", verdict_cell(p.verdict, md), p.host_ratio)
                                                     : verdict_cell(p.verdict, md)});
  }
  const CompareOptions& o = rep.options;
  if (rows.size() > 1)
    out += render_table(rows, {L, R, R, R, R, R, R, R, R, L}, md);
  else if (!rep.pairs.empty())
    out += "Every pair is within --hide-below.\n";
  if (!rep.pairs.empty())
    out += fmt::format(
        "{}SLOWER/FASTER: the median moved by more than {}% (--threshold) and {} ms (--min-change), beyond both noises (the medians' confidence intervals "
        "do not overlap), and p < {} (--alpha); SAME otherwise.{}"
        "noise: half-width of the ~95% confidence interval of the median, relative to it. p: two-sided Mann-Whitney U test on "
        "the raw samples. too few (samples): the U test cannot reach {} with these counts. ????: no time or no raw samples.\n",
        md ? "\n" : "", o.min_effect_pct, o.min_change_ms, o.alpha, md ? " " : "\n", o.alpha);
  if (rep.hidden)
    out += fmt::format("{} pair{} within --hide-below {}% hidden (still in the geomean, not in the exit code).\n", rep.hidden,
                       rep.hidden == 1 ? "" : "s", o.hide_below_pct);

  if (!rep.uncompared.empty()) {
    out += md ? fmt::format("\n### Not compared ({})\n\n", rep.uncompared.size()) : fmt::format("\nNot compared ({}):\n", rep.uncompared.size());
    std::vector<std::vector<std::string>> nrows{{"version", "case", "why"}};
    for (const auto& u : rep.uncompared) nrows.push_back({u.version, std::to_string(u.case_id), u.detail});
    if (md)
      out += markdown_table(nrows, {L, R, L});
    else {
      nrows.erase(nrows.begin());
      for (auto& r : nrows) r.insert(r.begin(), "");
      out += text_table(nrows, {L, L, R, L});
    }
  }

  if (!rep.geomeans.empty()) {
    out += md ? "\n### Geometric mean of B/A per version\n\n" : "\nGeometric mean of B/A per version:\n";
    std::vector<std::vector<std::string>> grows{{"version", "pairs", "geomean B/A", "FASTER", "SAME", "SLOWER", "too few", "????"}};
    bool drift = false;
    for (const auto& g : rep.geomeans) drift = drift || g.host_drift > 0;
    if (drift) grows[0].push_back("HOST DRIFT");  // only where the canaries moved
    for (const auto& g : rep.geomeans) {
      grows.push_back({g.version, std::to_string(g.pairs), fmt_ratio(g.geomean), std::to_string(g.faster), std::to_string(g.same),
                       std::to_string(g.slower), std::to_string(g.too_few), std::to_string(g.unknown)});
      if (drift) grows.back().push_back(std::to_string(g.host_drift));
    }
    out += render_table(grows, label_then_numbers(drift ? 9 : 8), md);
  }

  if (rep.pairs.empty())
    out += fmt::format("\nNothing compared: {}: exit code {}.\n", rep.nothing_compared, rep.exit_code());
  else
    out += fmt::format("\n{} SLOWER verdict{}{}: exit code {}.\n", rep.slower, rep.slower == 1 ? "" : "s",
                       rep.hidden_slower ? fmt::format(" ({} more within --hide-below, not counted)", rep.hidden_slower) : "", rep.exit_code());
  return out;
}

}  // namespace knn
