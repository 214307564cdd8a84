#pragma once
// The verdict of a validated answer: the one place that turns a ValidationReport into a status.
#include "result.hpp"

namespace knn {

// Sets r.validated, r.validation and r.status from a validation report: pass when it passed; when it
// did not, fail for knnbench's own versions and inexact for a peer (family "peer") unless
// strict_peers, with r.reason saying what was wrong (wrong queries, wrong neighbours, recall).
void grade(Result& r, const ValidationReport& report, bool strict_peers);

// The reason text of a failed validation: "validation: 3 mismatches, 0 invalid of 5120 neighbours
// (2 wrong queries, recall 0.9994); first: ...".
std::string validation_reason(const ValidationReport& report);

}  // namespace knn
