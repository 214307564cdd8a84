// What a results file's results must agree with, beyond each field's type (results_schema_read.cpp):
// a pass has a finite, non-negative median from at least one sample; the stats agree with the raw
// samples they summarise; no (case, version) appears twice. A file that breaks one is corrupt or
// edited, and comparing it would print nonsense with exit 0: the reader refuses it, naming the
// file, the result and the field.
#include <fmt/format.h>

#include <cmath>
#include <map>

#include "results_schema.hpp"
#include "stats.hpp"

namespace knn {
namespace {

[[noreturn]] void bad(const std::string& file, std::size_t i, const std::string& field, const std::string& what) {
  throw SchemaError(fmt::format("{}: results[{}].{}: {}", file, i, field, what));
}

// The writer's median and the reader's are computed alike from the same doubles (JSON keeps them
// exactly): only rounding in a hand-edited or older writer's value is forgiven. Relative, as calls
// of a few nanoseconds are recorded in ms.
bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)) + 1e-15; }

void check_times(const std::string& file, std::size_t i, const Result& r) {
  const Stats& s = r.stats;
  if (!std::isfinite(s.median) || s.median < 0) bad(file, i, "stats.median_ms", fmt::format("{}, expected a time ≥ 0 ms", s.median));
  if (s.samples < 1) bad(file, i, "stats.samples", fmt::format("{}, expected at least 1 for a pass", s.samples));
  for (const auto& [name, value] : {std::pair{"min_ms", s.min}, std::pair{"max_ms", s.max}, std::pair{"mean_ms", s.mean}})
    if (!std::isnan(value) && !(value >= 0 && std::isfinite(value))) bad(file, i, std::string("stats.") + name, fmt::format("{}, expected a time ≥ 0 ms", value));
  if (!std::isnan(s.min) && !std::isnan(s.max) && !(s.min <= s.median && s.median <= s.max))
    bad(file, i, "stats.median_ms", fmt::format("{}, outside [min_ms {}, max_ms {}]", s.median, s.min, s.max));
  if (r.samples_ms.empty()) return;  // files may leave the raw samples out
  for (std::size_t k = 0; k < r.samples_ms.size(); ++k)
    if (!(r.samples_ms[k] >= 0 && std::isfinite(r.samples_ms[k])))
      bad(file, i, fmt::format("samples_ms[{}]", k), fmt::format("{}, expected a time ≥ 0 ms", r.samples_ms[k]));
  if (std::size_t(s.samples) != r.samples_ms.size())
    bad(file, i, "stats.samples", fmt::format("{}, but samples_ms holds {} samples", s.samples, r.samples_ms.size()));
  const double m = median_of(r.samples_ms);
  if (!near(m, s.median)) bad(file, i, "stats.median_ms", fmt::format("{}, but the median of samples_ms is {}", s.median, m));
}

}  // namespace

void check_results_agree(const std::string& file, const std::vector<Result>& results) {
  std::map<std::pair<int, std::string>, std::size_t> seen;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    if (timed(r.status)) check_times(file, i, r);
    // inexact is a peer's answer that failed validation: it says so, and only a peer has it.
    if (r.status == Status::inexact && (!r.validated || r.validation.pass))
      bad(file, i, "status", "\"inexact\", but its validation did not fail (inexact is a peer's answer that failed validation)");
    if (r.status == Status::inexact && r.family != "peer")
      bad(file, i, "status", fmt::format("\"inexact\" for family \"{}\": only a peer is graded inexact, knnbench's own versions fail", r.family));
    const auto [it, fresh] = seen.emplace(std::pair{r.problem_case.id, r.label()}, i);
    if (!fresh)
      bad(file, i, "version",
          fmt::format("case {} with {} again (already results[{}]): a results file holds each (case, version, parameters) once",
                      r.problem_case.id, r.label(), it->second));
  }
}

}  // namespace knn
