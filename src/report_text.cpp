// Markdown and CSV exports.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "report.hpp"
#include "text_table.hpp"

namespace knn {
namespace {

std::string opt_ms(double v) { return v < 0 ? "" : format_ms(v); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// The figures scripts/plots/plot.py writes beside X.md (X-<figure>.png and .svg), in this order; "bars-"
// is one per family.
const std::vector<std::string> kPlotFigures{"heatmap", "bars-", "trees", "vs-floor", "compare"};

// Markdown image links to the figures that exist beside the report; empty when there are none.
std::string plot_links(const std::string& md_path) {
  namespace fs = std::filesystem;
  const fs::path md(md_path);
  const fs::path dir = md.has_parent_path() ? md.parent_path() : fs::path(".");
  const std::string prefix = md.stem().string() + "-";
  std::vector<std::pair<std::size_t, std::string>> found;  // figure rank, file stem
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string stem = p.stem().string();
    if (p.extension() != ".png" || stem.rfind(prefix, 0) != 0) continue;
    const std::string figure = stem.substr(prefix.size());
    for (std::size_t i = 0; i < kPlotFigures.size(); ++i)
      if (kPlotFigures[i].back() == '-' ? figure.rfind(kPlotFigures[i], 0) == 0 && figure.size() > kPlotFigures[i].size() : figure == kPlotFigures[i])
        found.emplace_back(i, stem);
  }
  if (found.empty()) return "";
  std::sort(found.begin(), found.end());
  std::string s = "## Plots\n\n";
  for (const auto& [rank, stem] : found) {
    const bool svg = fs::exists(dir / (stem + ".svg"), ec);
    s += fmt::format("![{0}]({0}.png){1}\n\n", stem, svg ? fmt::format(" ([SVG]({}.svg))", stem) : "");
  }
  return s;
}

const std::vector<std::string> kPhaseColumns{"build", "query", "h2d", "kernel", "d2h"};
const std::vector<std::string> kMarkdownPhaseColumns{"build", "query"};

class MarkdownReporter final : public Reporter {
 public:
  explicit MarkdownReporter(std::string path) : path_(std::move(path)) {}
  void end(const RunInfo& info, const std::vector<Result>& all) override {
    std::string s = "# knnbench results\n\n";
    s += fmt::format("- date: {}\n- host: {} ({}, {} cores)\n", info.started_utc, info.host.hostname, info.host.cpu_model, info.host.cores);
    if (info.devices.empty()) s += fmt::format("- devices: none ({})\n", info.device_note);
    for (std::size_t i = 0; i < info.devices.size(); ++i) {
      const DeviceInfo& d = info.devices[i];
      s += fmt::format("- device {}: {} (sm_{}{}, {} SMs, {:.1f} GiB); {}\n", d.ordinal, d.name, d.cc_major, d.cc_minor, d.sm_count,
                       d.total_memory / 1073741824.0, rates_text(info, i));
    }
    s += fmt::format("- matrix: {} ({}), host memory: {}\n", info.matrix_file, info.matrix_checksum, host_memory_text(info));
    if (info.mpi_ranks > 0) s += fmt::format("- mpirun: {} rank{}\n", info.mpi_ranks, info.mpi_ranks == 1 ? "" : "s");
    for (const RankPlace& p : info.rank_places) s += fmt::format("  - rank {}: host {}, GPU {}\n", p.rank, p.host, p.gpu);
    s += "\n## Median wall time per call (ms)\n\n";
    TableRows summary = summary_table(all);
    if (std::vector<std::string> floors = floor_row(all, summary.empty() ? std::vector<std::string>{} : summary[0]); !floors.empty())
      summary.push_back(std::move(floors));
    s += markdown_table(summary, {});
    const std::string legend = summary_legend(all) + floor_legend(all);
    if (!legend.empty()) s += "\n" + legend;
    s += "\nnoise % = half-width of the ~95 % confidence interval of the median, relative to the median.\n\n";
    s += canary_spread_text(info, all, true);
    s += plot_links(path_) + "## Every result\n\n";
    std::vector<std::string> head{"case", "k", "m", "n", "topk", "version", "status", "median ms", "noise %", "samples", "floor ms", "x floor", "GPU busy %"};
    for (const auto& p : kMarkdownPhaseColumns) head.push_back(p + " ms");
    head.push_back("phases (median ms)");
    head.push_back("path / reason");
    TableRows rows{head};
    for (const auto& r : all) {
      const auto& c = r.problem_case;
      std::vector<std::string> row{std::to_string(c.id), std::to_string(c.dim), std::to_string(c.m), std::to_string(c.n),
                                   std::to_string(c.topk), r.label(), to_string(r.status),
                                   timed(r.status) ? format_ms(r.stats.median) : "",
                                   timed(r.status) ? format_noise_pct(r.stats.median_noise_pct) : "",
                                   std::to_string(r.stats.samples), floor_ms_text(r), x_floor_text(r), gpu_busy_text(r)};
      for (const auto& p : kMarkdownPhaseColumns) row.push_back(opt_ms(phase_median(r, p)));
      row.push_back(version_phases_text(r));
      std::string tail = r.status == Status::inexact ? inexact_text(r) + "; first: " + r.validation.first_problem
                         : r.reason.empty()                ? r.path
                                                           : r.reason;
      const std::string busy_note = gpu_busy_text(r) == "-" ? "GPU busy time " + r.gpu_busy.note : "";
      for (const auto& extra : {r.note, result_remarks(r), busy_note})
        if (!extra.empty()) tail += (tail.empty() ? "" : "; ") + extra;
      row.push_back(tail);
      rows.push_back(row);
    }
    s += markdown_table(rows, {});
    s += trees_against_brute_force(all);
    write_file_atomically(path_, s);
  }

 private:
  // A tree pays a build to query faster: say plainly, per case, whether it beat the fastest
  // brute-force version that ran, build included.
  static std::string trees_against_brute_force(const std::vector<Result>& all) {
    TableRows rows{{"case", "tree", "build ms", "query ms", "total ms", "fastest brute force", "its ms", "verdict"}};
    for (const auto& t : all) {
      if (t.family != "tree" || t.status != Status::pass) continue;
      const Result* best = nullptr;
      for (const auto& b : all)
        if (b.family != "tree" && b.status == Status::pass && b.problem_case.id == t.problem_case.id &&
            (!best || b.stats.median < best->stats.median))
          best = &b;
      if (!best) continue;
      const double ratio = t.stats.median / best->stats.median;
      rows.push_back({std::to_string(t.problem_case.id), t.label(), opt_ms(phase_median(t, "build")), opt_ms(phase_median(t, "query")),
                   format_ms(t.stats.median), best->version, format_ms(best->stats.median),
                   ratio <= 1 ? fmt::format("tree wins ({:.2f}x faster)", 1 / ratio) : fmt::format("tree loses ({:.2f}x slower)", ratio)});
    }
    if (rows.size() == 1) return "";
    return "\n## Trees against the fastest brute force (build included)\n\n" + markdown_table(rows, {});
  }

  std::string path_;
};

class CsvReporter final : public Reporter {
 public:
  explicit CsvReporter(std::string path) : path_(std::move(path)) {}
  void end(const RunInfo&, const std::vector<Result>& all) override {
    std::string s = "case,k,m,n,topk,distribution,version,family,status,samples,median_ms,min_ms,max_ms,mean_ms,stdev_ms,noise_pct";
    for (const auto& p : kPhaseColumns) s += "," + p + "_ms";
    s += ",other_phases,validation,mismatches,ties_accepted,path,reason,note";
    s += ",median_noise_pct,calls_per_sample,noise_target_missed,interrupted,sm_clock_mhz_before,sm_clock_mhz_after,throttle_before,throttle_after,ground_truth,wrong_queries,wrong_neighbors,recall,floor_ms,x_floor,floor_bound\n";
    for (const auto& r : all) {
      const auto& c = r.problem_case;
      const auto& st = r.stats;
      // A result that did not pass has no time: empty cells, never 0.
      auto t = [&r](double v) { return timed(r.status) && std::isfinite(v) ? fmt::format("{}", v) : std::string(); };
      s += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", c.id, c.dim, c.m, c.n, c.topk, to_string(c.distribution), r.label(),
                       r.family, to_string(r.status), st.samples, t(st.median), t(st.min), t(st.max), t(st.mean), t(st.stdev), t(st.noise_pct));
      for (const auto& p : kPhaseColumns) {
        const double v = phase_median(r, p);
        s += v < 0 ? "," : fmt::format(",{}", v);
      }
      const char* val = r.status == Status::skip ? "" : !r.validated ? "off" : r.validation.pass ? "pass" : "fail";  // inexact: fail
      s += fmt::format(",{},{},{},{},{},{},{}", csv_field(version_phases_text(r)), val, r.validation.mismatches, r.validation.ties_accepted, csv_field(r.path),
                       csv_field(r.reason), csv_field(r.note));
      const ResultClocks& k = r.clocks;
      auto mhz = [&k](double v) { return k.recorded() ? fmt::format("{}", v) : std::string(); };
      s += fmt::format(",{},{},{},{},{},{},{},{},{}", t(st.median_noise_pct), r.calls_per_sample, r.noise_target_missed, r.interrupted,
                       mhz(k.sm_clock_mhz_before), mhz(k.sm_clock_mhz_after), csv_field(k.throttle_before), csv_field(k.throttle_after),
                       csv_field(r.validated ? r.validation.ground_truth : ""));
      const ValidationReport& v = r.validation;
      s += r.validated ? fmt::format(",{},{},{}", v.wrong_queries, v.wrong_neighbors(), v.recall()) : ",,,";
      const ResultFloor& f = r.floor;  // empty without a floor
      s += f.has_floor() ? fmt::format(",{},{},{}\n", f.floor_ms, f.x_floor > 0 ? fmt::format("{}", f.x_floor) : "", to_string(f.bound)) : ",,\n";
    }
    write_file_atomically(path_, s);
  }

 private:
  std::string path_;
};

}  // namespace

std::unique_ptr<Reporter> make_markdown_reporter(std::string path) { return std::make_unique<MarkdownReporter>(std::move(path)); }
std::unique_ptr<Reporter> make_csv_reporter(std::string path) { return std::make_unique<CsvReporter>(std::move(path)); }

}  // namespace knn
