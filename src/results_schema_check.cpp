// What a results file's results must agree with, beyond each field's type and range
// (results_schema_read.cpp): stats.samples is the length of samples_ms; every stat derived from
// the samples (median, min, max, mean, stdev, noise, the median's interval and noise) is what they
// give; a fail says why; a pass has a finite, non-negative median from at least one sample; an inexact result is a
// peer's failed answer; no (case, version) appears twice; an interleaved result has the one partner
// it ran beside, with as many samples. A file that breaks one is corrupt or
// edited, and comparing it would print nonsense with exit 0: the reader refuses it, naming the
// file, the result and the field.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "results_schema.hpp"
#include "stats.hpp"

namespace knn {
namespace {

[[noreturn]] void bad(const std::string& label, const std::string& field, const std::string& what) {
  throw SchemaError(fmt::format("{}.{}: {}", label, field, what));
}

// The stats of the samples, against the written ones: a NaN (null) written value is not checked
// (older files, or too few samples for it).
void check_derived(const std::string& label, const Result& r) {
  const Stats& s = r.stats;
  const Stats again = summarize(r.samples_ms);
  struct Derived {
    const char *field, *what;
    double written, recomputed;
  };
  const Derived derived[] = {
      {"stats.median_ms", "median", s.median, again.median},
      {"stats.min_ms", "minimum", s.min, again.min},
      {"stats.max_ms", "maximum", s.max, again.max},
      {"stats.mean_ms", "mean", s.mean, again.mean},
      {"stats.stdev_ms", "standard deviation", s.stdev, again.stdev},
      {"stats.noise_pct", "noise (stdev / mean)", s.noise_pct, again.noise_pct},
      {"stats.median_noise_pct", "median's noise", s.median_noise_pct, again.median_noise_pct},
      {"stats.median_ci_ms[0]", "median's interval's low end", s.median_ci_low, again.median_ci_low},
      {"stats.median_ci_ms[1]", "median's interval's high end", s.median_ci_high, again.median_ci_high},
  };
  for (const Derived& d : derived) {
    if (std::isnan(d.written) || r.samples_ms.empty()) continue;
    if (std::isnan(d.recomputed))
      bad(label, d.field, fmt::format("{}, but {} samples have no {} (null)", d.written, r.samples_ms.size(), d.what));
    if (!stat_agrees(d.written, d.recomputed))
      bad(label, d.field, fmt::format("{}, but the {} of samples_ms is {}", d.written, d.what, d.recomputed));
  }
}

// `other` without the file both labels name: "results[0]" beside "f.json: results[2]".
std::string same_file(const std::string& other, const std::string& label) {
  const auto cut = other.find(": ");
  return cut != std::string::npos && label.compare(0, cut + 2, other, 0, cut + 2) == 0 ? other.substr(cut + 2) : other;
}

void check_times(const std::string& label, const Result& r) {
  const Stats& s = r.stats;
  if (!std::isfinite(s.median) || s.median < 0) bad(label, "stats.median_ms", fmt::format("{}, expected a time ≥ 0 ms", s.median));
  if (s.samples < 1) bad(label, "stats.samples", fmt::format("{}, expected at least 1 for a timed result", s.samples));
  if (!(s.min <= s.median && s.median <= s.max))
    bad(label, "stats.median_ms", fmt::format("{}, outside [min_ms {}, max_ms {}]", s.median, s.min, s.max));
}

// --interleave: an interleaved result ran in one loop with exactly one other of its case and version
// (the other setting), sample beside sample: as many samples each.
void check_interleaved_pairs(const std::vector<std::string>& labels, const std::vector<Result>& results) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    if (!r.interleaved) continue;
    std::vector<std::size_t> partners;
    for (std::size_t k = 0; k < results.size(); ++k)
      if (k != i && results[k].interleaved && results[k].problem_case.id == r.problem_case.id && results[k].version == r.version)
        partners.push_back(k);
    if (partners.size() != 1)
      bad(labels.at(i), "interleaved", fmt::format("true, but {} other interleaved results of case {} with {} (expected the one other "
                                                   "setting it ran beside)", partners.size(), r.problem_case.id, r.version));
    const Result& other = results[partners[0]];
    if (other.samples_ms.size() != r.samples_ms.size())
      bad(labels.at(i), "interleaved", fmt::format("true, but its {} samples and the {} of {} ({}) do not pair one by one",
                                                   r.samples_ms.size(), other.samples_ms.size(), other.label(),
                                                   same_file(labels.at(partners[0]), labels.at(i))));
  }
}

}  // namespace

// Relative 1e-9: the writer's stats and the reader's are computed alike from the same doubles (JSON
// keeps them exactly), so only rounding in a hand-edited or older writer's value is forgiven;
// relative, as calls of a few nanoseconds are recorded in ms.
bool stat_agrees(double written, double recomputed) {
  return std::abs(written - recomputed) <= 1e-9 * std::max(std::abs(written), std::abs(recomputed)) + 1e-15;
}

void check_results_agree(const std::string& file, const std::vector<Result>& results) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < results.size(); ++i) labels.push_back(fmt::format("{}: results[{}]", file, i));
  check_results_agree(labels, results);
}

void check_results_agree(const std::vector<std::string>& labels, const std::vector<Result>& results) {
  std::map<std::pair<int, std::string>, std::size_t> seen;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const std::string& label = labels.at(i);
    if (std::size_t(r.stats.samples) != r.samples_ms.size())
      bad(label, "stats.samples", fmt::format("{}, but samples_ms holds {} samples", r.stats.samples, r.samples_ms.size()));
    if (timed(r.status)) check_times(label, r);
    check_derived(label, r);
    // inexact is a peer's answer that failed validation: it says so, and only a peer has it.
    if (r.status == Status::inexact && (!r.validated || r.validation.pass))
      bad(label, "status", "\"inexact\", but its validation did not fail (inexact is a peer's answer that failed validation)");
    // The writer gives every fail its reason (the error, or the failed validation's counts): one with
    // neither a reason nor a failed validation says nothing of why it failed.
    if (r.status == Status::fail && r.reason.empty() && !(r.validated && !r.validation.pass))
      bad(label, "status", fmt::format("\"fail\" with no reason, but its validation {}: a fail says why (its reason) or holds a failed validation",
                                       r.validated ? "passed" : "is off"));
    if (r.status == Status::inexact && r.family != "peer")
      bad(label, "status", fmt::format("\"inexact\" for family \"{}\": only a peer is graded inexact, knnbench's own versions fail", r.family));
    // What the writer never writes: a family outside the five, a validation of more queries than the
    // case has.
    if (!r.family.empty() && r.family != "cpu" && r.family != "gpu" && r.family != "multi-gpu" && r.family != "tree" && r.family != "peer")
      bad(label, "family", fmt::format("\"{}\": expected cpu, gpu, multi-gpu, tree or peer", r.family));
    if (const long long m = r.problem_case.self_join ? r.problem_case.n : r.problem_case.m; r.validated && r.validation.queries_checked > m)
      bad(label, "validation.queries_checked", fmt::format("{}, but the case has {} queries", r.validation.queries_checked, m));
    const auto [it, fresh] = seen.emplace(std::pair{r.problem_case.id, r.label()}, i);
    if (!fresh)
      bad(label, "version", fmt::format("case {} with {} again (already {}): a results file holds each (case, version, parameters) once",
                                        r.problem_case.id, r.label(), same_file(labels.at(it->second), label)));
  }
  check_interleaved_pairs(labels, results);
}

}  // namespace knn
