// `knnbench compare`: reads two results files through the one reader, pairs their results and
// judges each pair. Printing is compare_format.cpp.
#include "compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unistd.h>
#include <limits>
#include <map>
#include <set>

#include "compare_params.hpp"
#include "output_file.hpp"
#include "report.hpp"  // inexact_text
#include "results_journal.hpp"
#include "selection.hpp"
#include "terminal.hpp"

namespace knn {

using json = nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMinSamples = kCompareMinSamples;

std::string params(const Case& c) {
  const std::string data = c.distribution == Distribution::integers ? fmt::format("integers<{}", c.integer_max) : to_string(c.distribution);
  return fmt::format("k={} m={} n={} topk={}{} {} seed={}", c.dim, c.m, c.n, c.topk, c.self_join ? " self-join" : "", data, c.seed);
}

// Results pair when version, case id, case parameters and the version's parameters agree.
std::string pair_key(const Result& r, const CompareOptions& o) {
  return fmt::format("{}#{}#{}#{}", r.version, r.problem_case.id, params(r.problem_case), o.ignore_params ? "" : param_key(r));
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// ---------------------------------------------------------------- filters

struct Filter {
  std::set<std::string> versions;  // empty: all
  std::set<int> cases;             // empty: all
  bool keep(const Result& r) const {
    return (versions.empty() || versions.count(r.version)) && (cases.empty() || cases.count(r.problem_case.id));
  }
};

// Each filter item must match something in A or B: a typo must not pass CI as "nothing slower".
Filter make_filter(const CompareOptions& opts, const std::vector<Result>& a, const std::vector<Result>& b) {
  std::set<std::string> have_versions;
  std::set<int> have_cases;
  for (const auto* side : {&a, &b})
    for (const auto& r : *side) {
      have_versions.insert(r.version);
      have_cases.insert(r.problem_case.id);
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

void check_options(const CompareOptions& o) {
  if (!(o.min_effect_pct >= 0)) throw CompareError(fmt::format("--threshold {}: expected a percentage >= 0", o.min_effect_pct));
  if (!(o.min_change_ms >= 0)) throw CompareError(fmt::format("--min-change {}: expected milliseconds >= 0", o.min_change_ms));
  if (!(o.alpha > 0 && o.alpha < 1)) throw CompareError(fmt::format("--alpha {}: expected a probability between 0 and 1", o.alpha));
  if (!(o.hide_below_pct >= 0)) throw CompareError(fmt::format("--hide-below {}: expected a percentage >= 0", o.hide_below_pct));
}

std::string short_sum(const std::string& s) { return s.size() > 12 ? s.substr(0, 12) : s; }

void sort_report(CompareReport& r) {
  std::sort(r.pairs.begin(), r.pairs.end(), [](const ComparedPair& x, const ComparedPair& y) {
    return x.version != y.version ? version_less(x.version, y.version) : x.case_id < y.case_id;
  });
  std::stable_sort(r.uncompared.begin(), r.uncompared.end(), [](const UncomparedEntry& x, const UncomparedEntry& y) {
    if (x.version != y.version) return version_less(x.version, y.version);
    return x.case_id != y.case_id ? x.case_id < y.case_id : int(x.kind) < int(y.kind);
  });
}

// Checksums and statuses decide whether a pair is judged at all; this judges one that is.
ComparedPair judge_pair(const Result& a, const Result& b, const CompareOptions& opts) {
  ComparedPair p{a.problem_case.id, a.label(),         params(a.problem_case), a.stats.median, a.stats.median_noise_pct,
                 b.stats.median,    b.stats.median_noise_pct, a.stats.samples, b.stats.samples};
  p.ratio = a.stats.median > 0 && std::isfinite(b.stats.median) ? b.stats.median / a.stats.median : kNaN;
  p.verdict = judge_results(a, b, opts, &p.p_value);
  p.hidden = opts.hide_below_pct > 0 && std::isfinite(p.ratio) && std::abs(p.ratio - 1) * 100 < opts.hide_below_pct;
  const double change = std::abs(b.stats.median - a.stats.median);
  p.under_min_change = p.verdict == Verdict::same && std::isfinite(p.ratio) && std::abs(p.ratio - 1) * 100 > opts.min_effect_pct &&
                       !(change > opts.min_change_ms);
  p.a_ground_truth = a.validated ? a.validation.ground_truth : "";
  p.b_ground_truth = b.validated ? b.validation.ground_truth : "";
  return p;
}

// Why nothing was judged, from what was left out.
std::string nothing_compared_reason(const CompareReport& rep, std::size_t kept_a, std::size_t kept_b, bool filtered) {
  const std::string after = filtered ? " after --version/--case" : "";
  if (kept_a == 0 || kept_b == 0)
    return fmt::format("{} holds no result{}", kept_a == 0 ? rep.a.file : rep.b.file, after);
  int count[4] = {0, 0, 0, 0};
  for (const auto& u : rep.uncompared) ++count[int(u.kind)];
  return fmt::format("of {} results in A and {} in B{}: {} not passing on both sides, {} refused (different inputs), {} only in A, {} only in B",
                     kept_a, kept_b, after, count[int(NotCompared::status)], count[int(NotCompared::refused)], count[int(NotCompared::only_in_a)],
                     count[int(NotCompared::only_in_b)]);
}

void add_geomeans(CompareReport& rep) {
  for (const auto& p : rep.pairs) {
    if (p.hidden) ++rep.hidden;
    if (p.verdict == Verdict::slower) ++(p.hidden ? rep.hidden_slower : rep.slower);
    if (rep.geomeans.empty() || rep.geomeans.back().version != p.version) rep.geomeans.push_back({p.version});
    VersionGeomean& g = rep.geomeans.back();
    switch (p.verdict) {
      case Verdict::same: ++g.same; break;
      case Verdict::faster: ++g.faster; break;
      case Verdict::slower: ++g.slower; break;
      case Verdict::too_few: ++g.too_few; break;
      case Verdict::unknown: ++g.unknown; break;
      case Verdict::host_drift: ++g.host_drift; break;
    }
    if (std::isfinite(p.ratio) && p.ratio > 0) {
      g.geomean += std::log(p.ratio);  // a sum of logs until the end
      ++g.pairs;
    }
  }
  for (auto& g : rep.geomeans) g.geomean = g.pairs ? std::exp(g.geomean / g.pairs) : kNaN;
}

}  // namespace

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::same: return "SAME";
    case Verdict::faster: return "FASTER";
    case Verdict::slower: return "SLOWER";
    case Verdict::too_few: return "too few samples";
    case Verdict::unknown: return "????";
    case Verdict::host_drift: return "HOST DRIFT";
  }
  return "?";
}

Verdict judge_results(const Result& a, const Result& b, const CompareOptions& opts, std::optional<double>* p_value) {
  const int na = int(a.samples_ms.size()), nb = int(b.samples_ms.size());
  std::optional<double> p;
  if (na >= kMinSamples && nb >= kMinSamples) p = mann_whitney_p(a.samples_ms, b.samples_ms);
  if (p_value) *p_value = p;
  const Stats &sa = a.stats, &sb = b.stats;
  if (!(sa.median > 0) || !(sb.median > 0) || na == 0 || nb == 0) return Verdict::unknown;
  if (na < kMinSamples || nb < kMinSamples || mann_whitney_min_p(na, nb) > opts.alpha) return Verdict::too_few;
  if (!std::isfinite(sa.median_noise_pct) || !std::isfinite(sb.median_noise_pct)) return Verdict::unknown;
  const double change = sb.median - sa.median;
  const bool beyond_effect = std::abs(change) / sa.median * 100 > opts.min_effect_pct && std::abs(change) > opts.min_change_ms;
  const bool beyond_noise = std::abs(change) > (sa.median * sa.median_noise_pct + sb.median * sb.median_noise_pct) / 100;
  const bool significant = p && *p < opts.alpha;
  if (!(beyond_effect && beyond_noise && significant)) return Verdict::same;
  return change < 0 ? Verdict::faster : Verdict::slower;
}

CompareReport compare_runs(const ResultsDocument& doc_a, const ResultsDocument& doc_b, const CompareOptions& opts) {
  check_options(opts);
  const std::vector<Result>&all_a = doc_a.results, &all_b = doc_b.results;
  const Filter filter = make_filter(opts, all_a, all_b);

  CompareReport rep;
  rep.a = {doc_a.file, doc_a.info};
  rep.b = {doc_b.file, doc_b.info};
  rep.notes = header_notes(rep.a, rep.b);
  rep.options = opts;
  const HostShift shift = host_shift(all_a, all_b);  // compare_canary.cpp

  // A result appearing twice in one file: the first is used, the others are said.
  auto index = [&rep, &filter, &opts](const std::vector<Result>& all, const std::string& file) {
    std::vector<const Result*> kept;
    std::map<std::string, const Result*> by_key;
    for (const auto& r : all) {
      if (!filter.keep(r)) continue;
      if (!by_key.emplace(pair_key(r, opts), &r).second) {
        rep.notes.push_back(fmt::format("{} holds {} case {} more than once; the first is used.", file, r.label(), r.problem_case.id));
        continue;
      }
      kept.push_back(&r);
    }
    return std::make_pair(kept, by_key);
  };
  const auto [kept_a, by_key_a] = index(all_a, doc_a.file);
  const auto [kept_b, by_key_b] = index(all_b, doc_b.file);

  std::set<const Result*> paired_a;
  std::vector<std::pair<const Result*, const Result*>> pairs;
  std::vector<const Result*> left_b;
  for (const Result* rb : kept_b) {
    const auto it = by_key_a.find(pair_key(*rb, opts));
    if (it == by_key_a.end()) {
      left_b.push_back(rb);
      continue;
    }
    pairs.emplace_back(it->second, rb);
    paired_a.insert(it->second);
  }
  std::vector<const Result*> left_a;
  for (const Result* ra : kept_a)
    if (!paired_a.count(ra)) left_a.push_back(ra);

  pair_other_parameter_values(left_a, left_b, pairs, rep);
  // Same case id and version but other case parameters: other inputs, so refused rather than "only in".
  for (auto ia = left_a.begin(); ia != left_a.end();) {
    const Result& ra = **ia;
    const auto ib = std::find_if(left_b.begin(), left_b.end(),
                                 [&](const Result* rb) { return rb->version == ra.version && rb->problem_case.id == ra.problem_case.id; });
    if (ib == left_b.end()) {
      ++ia;
      continue;
    }
    rep.uncompared.push_back({NotCompared::refused, ra.problem_case.id, ra.version,
                              fmt::format("refused: different case parameters (A: {}; B: {}); different inputs are not comparable",
                                          params(ra.problem_case), params((*ib)->problem_case))});
    left_b.erase(ib);
    ia = left_a.erase(ia);
  }
  for (const Result* r : left_a)
    rep.uncompared.push_back({NotCompared::only_in_a, r->problem_case.id, r->label(), fmt::format("only in A ({}, {})", params(r->problem_case), to_string(r->status))});
  for (const Result* r : left_b)
    rep.uncompared.push_back({NotCompared::only_in_b, r->problem_case.id, r->label(), fmt::format("only in B ({}, {})", params(r->problem_case), to_string(r->status))});

  for (const auto& [ra, rb] : pairs) {
    if (ra->query_checksum != rb->query_checksum || ra->reference_checksum != rb->reference_checksum) {
      std::vector<std::string> diff;
      if (ra->query_checksum != rb->query_checksum)
        diff.push_back(fmt::format("queries {} vs {}", short_sum(ra->query_checksum), short_sum(rb->query_checksum)));
      if (ra->reference_checksum != rb->reference_checksum)
        diff.push_back(fmt::format("references {} vs {}", short_sum(ra->reference_checksum), short_sum(rb->reference_checksum)));
      rep.uncompared.push_back({NotCompared::refused, ra->problem_case.id, ra->version,
                                fmt::format("refused: input checksums differ ({}); different inputs are not comparable", join(diff))});
      continue;
    }
    if (!timed(ra->status) || !timed(rb->status) || ra->interrupted || rb->interrupted) {
      auto side = [](const Result* r) {
        return std::string(to_string(r->status)) + (r->interrupted ? " (interrupted)" : "") +
               (r->status != Status::pass && !r->reason.empty() ? " (" + r->reason + ")" : "");
      };
      rep.uncompared.push_back({NotCompared::status, ra->problem_case.id, ra->version, fmt::format("A {}, B {}", side(ra), side(rb))});
      continue;
    }
    // A peer's inexact answer is still a time: judged, and its accuracy said beside the verdict.
    if (ra->status == Status::inexact || rb->status == Status::inexact) {
      auto side = [](const Result* r) { return r->status == Status::inexact ? "inexact (" + inexact_text(*r) + ")" : std::string("exact"); };
      rep.notes.push_back(fmt::format("{} case {}: A {}, B {}", ra->version, ra->problem_case.id, side(ra), side(rb)));
    }
    if (opts.ignore_params)
      if (const auto diff = param_differences(*ra, *rb); !diff.empty())
        rep.notes.push_back(fmt::format("{} case {}: paired under --ignore-params although its parameters differ ({})", ra->version,
                                        ra->problem_case.id, join(diff)));
    rep.pairs.push_back(with_host_drift(judge_pair(*ra, *rb, opts), *ra, *rb, shift, opts));
  }
  sort_report(rep);
  for (auto& note : ground_truth_notes(rep.pairs)) rep.notes.push_back(std::move(note));
  for (auto& note : min_change_notes(rep.pairs, opts)) rep.notes.push_back(std::move(note));
  add_geomeans(rep);
  for (auto& note : drift_notes(rep.geomeans, opts.min_effect_pct)) rep.notes.push_back(std::move(note));
  for (auto& note : host_drift_notes(shift, rep)) rep.notes.push_back(std::move(note));
  if (rep.pairs.empty()) rep.nothing_compared = nothing_compared_reason(rep, kept_a.size(), kept_b.size(), !opts.versions.empty() || !opts.cases.empty());
  return rep;
}

CompareReport compare_documents(const json& doc_a, const json& doc_b, const CompareOptions& opts) {
  check_options(opts);
  try {
    const ResultsDocument a = read_results_document(doc_a, opts.file_a.empty() ? "A" : opts.file_a);
    const ResultsDocument b = read_results_document(doc_b, opts.file_b.empty() ? "B" : opts.file_b);
    return compare_runs(a, b, opts);
  } catch (const SchemaError& e) {
    throw CompareError(e.what());
  }
}

int run_compare(const CompareOptions& opts) {
  try {
    const bool by_params = !opts.params_ab.empty();
    if (by_params) {
      if (opts.params_ab.size() != 2) throw CompareError("--params takes two settings: knnbench compare --params v15.tc=off v15.tc=on FILE.json");
      if (opts.file_a.empty() || !opts.file_b.empty())
        throw CompareError("--params compares two settings inside one results file: knnbench compare --params A B FILE.json");
    } else if (opts.file_a.empty() || opts.file_b.empty()) {
      throw CompareError("needs two results files: knnbench compare A.json B.json");
    }
    // Before anything is read or written: the markdown must not replace an input (A, B, or the
    // journal of a killed run beside either, which holds its only copy of the finished results).
    for (const auto& [side, input] : {std::pair{"A", &opts.file_a}, std::pair{"B", &opts.file_b}})
      if (!input->empty())
        refuse_same_files({{"--md", opts.markdown_path}, {fmt::format("results file {}", side), *input}, {fmt::format("{}'s journal", side), journal_path(*input)}});
    // A directory, a FIFO with no reader, a folder that takes no new file: said now, not after the report.
    check_output("--md", opts.markdown_path);
    CompareReport rep;
    if (by_params) {
      const auto [a, b] = split_by_params(read_results_file(opts.file_a), opts.params_ab[0], opts.params_ab[1]);
      rep = compare_runs(a, b, opts);
    } else {
      rep = compare_runs(read_results_file(opts.file_a), read_results_file(opts.file_b), opts);
    }
    // The terminal gets the text report unless the markdown goes to standard output instead.
    if (opts.markdown_path != "-") {
      const bool colour = colour_wanted(STDOUT_FILENO);  // a terminal without NO_COLOR
      const std::string text = wrap_lines(format_compare(rep, false), kScreenWidth);
      fmt::print("{}", paint_word(paint_word(text, "SLOWER", Colour::red, colour), "FASTER", Colour::green, colour));
    }
    std::fflush(stdout);
    if (!opts.markdown_path.empty()) write_output_file(opts.markdown_path, format_compare(rep, true));
    return rep.exit_code();
  } catch (const CompareError& e) {
    fmt::print(stderr, "knnbench compare: {}\n", e.what());
  } catch (const SchemaError& e) {
    fmt::print(stderr, "knnbench compare: {}\n", e.what());
  } catch (const ConfigError& e) {
    fmt::print(stderr, "knnbench compare: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "knnbench compare: internal error: {}\n", e.what());
    return kExitInternal;
  }
  return kCompareExitUsage;
}

CLI::App* add_compare_subcommand(CLI::App& app, CompareOptions& opts) {
  CLI::App* sub = app.add_subcommand("compare",
                                     "Compare two results files: each (case, version) of B against A.\n"
                                     "Pairs match on case id, case parameters, version and input checksums.");
  sub->add_option("A", opts.file_a, "Results JSON A, the baseline (e.g. results/h100/default.json.gz)");
  sub->add_option("B", opts.file_b, "Results JSON B, judged against A (e.g. results/local/<host>-<utc>.json)");
  sub->add_option("--threshold", opts.min_effect_pct, "Minimum effect: a change of the median under PCT percent is SAME")
      ->type_name("PCT")
      ->capture_default_str();
  sub->add_option("--min-change", opts.min_change_ms,
                  "Minimum absolute effect: a change of the median under MS milliseconds is SAME (0 turns it off)")
      ->type_name("MS")
      ->capture_default_str();
  sub->add_option("--alpha", opts.alpha, "Significance level of the Mann-Whitney U test")->capture_default_str();
  sub->add_option("--hide-below", opts.hide_below_pct, "Do not print pairs whose |B/A - 1| is under PCT percent (still in the geomean)")
      ->type_name("PCT");
  sub->add_option("--version", opts.versions, "Versions to compare: v3, or lists like v1,v3 (repeatable; default all)")->delimiter(',');
  sub->add_option("--case", opts.cases, "Case ids: 11, ranges like 8-11, or lists (repeatable; default all)")->delimiter(',');
  sub->add_flag("--ignore-params", opts.ignore_params,
                "Pair results of a version whose parameters differ (by default they are different variants, not paired)");
  sub->add_option("--params", opts.params_ab,
                  "Two settings of one parameter inside ONE results file, A then B: --params v15.tc=off v15.tc=on FILE "
                  "(an ablation's verdict)")
      ->expected(2)
      ->allow_extra_args(false)
      ->type_name("A B");
  sub->add_option("--md", opts.markdown_path, "Also write the report as markdown to FILE (\"-\": standard output, instead of the text)")
      ->type_name("FILE");
  sub->footer(
      "Verdicts: SLOWER or FASTER only when the median moved by more than --threshold (default 5 %) and by more\n"
      "than --min-change (default 0.05 ms: the spread between two processes of sub-millisecond GPU calls), beyond the\n"
      "noise of both sides (the medians' ~95 % confidence intervals do not overlap) and the Mann-Whitney U test on\n"
      "the raw samples rejects equality at --alpha (default 0.01); SAME otherwise. \"too few samples\" when the U\n"
      "test cannot reach alpha (e.g. 4 against 4 samples at 0.01); ???? without a time or raw samples.\n"
      "Results whose input checksums differ are refused; skipped or failed ones are listed, not compared.\n"
      "A version's results pair only when its parameters agree (--ignore-params pairs them anyway).\n\n"
      "Exit codes (compare): 0 no SLOWER verdict; 1 at least one SLOWER verdict (the report counts them);\n"
      "2 nothing compared (no pair of passing results, with the reason) or a usage error (missing or\n"
      "invalid file, wrong schema_version, bad flag), with a one-line message; 3 an internal error.\n\n"
      "Example: knnbench compare results/h100/default.json.gz results/local/mybox.json --version v3,v8 --case 8-11");
  return sub;
}

}  // namespace knn
