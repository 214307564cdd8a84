#include "grade.hpp"

#include <fmt/format.h>

namespace knn {

std::string validation_reason(const ValidationReport& v) {
  const bool both = v.ground_truth.find(" + ") != std::string::npos;
  return fmt::format("validation{}: {} mismatches, {} invalid of {} neighbours ({} wrong {}, recall@topk {:.6g}); first: {}",
                     both ? " against " + v.ground_truth : "", v.mismatches, v.invalid, v.checked, v.wrong_queries,
                     v.wrong_queries == 1 ? "query" : "queries", v.recall(), v.first_problem);
}

void grade(Result& r, const ValidationReport& report, bool strict_peers) {
  r.validated = true;
  r.validation = report;
  if (report.pass) {
    r.status = Status::pass;
    return;
  }
  r.status = r.family == "peer" && !strict_peers ? Status::inexact : Status::fail;
  r.reason = validation_reason(report);
}

}  // namespace knn
