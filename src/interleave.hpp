#pragma once
// --interleave: the two settings of a version that a sweep of one parameter over two values gives
// (--param V.NAME=X,Y; what `ab --paired` passes) measured in ONE sampling loop whose samples
// alternate X Y Y X X Y ..., each timed on its own, after a warm-up of both. Each setting still gets
// its own result with its own samples, as the sweep gives them, marked interleaved; sample i of one
// and sample i of the other ran next to each other. A host whose speed changes within a process
// (docs/measurement.md, "compare or ab") then slows both settings' neighbouring samples alike.
#include <optional>
#include <string>
#include <vector>

#include "measure.hpp"
#include "options.hpp"
#include "plan.hpp"

namespace knn {

// ConfigError (exit 2) naming --interleave and what it cannot honour: --isolate, --resample, several
// ranks of mpirun, a version run in more than two settings in a case, or no version in two.
void refuse_what_interleave_cannot_do(const RunOptions& opts, const Plan& plan);

// The items of a case in the order they run under --interleave: a version's two settings as one
// entry, where the first of them stood; every other item alone.
std::vector<std::vector<const PlanItem*>> interleave_groups(const std::vector<const PlanItem*>& items);

// Both settings of `desc` on `p` (env_a and env_b carry their parameters) in one loop: warm-up
// A B (each --warmup times), then samples A B, B A, A B, ... each with its own batch size (calls
// per sample), until both settings met the targets or either reached a limit; both keep the same
// number of samples. ra and rb arrive named and leave measured (marked interleaved) and graded
// against `reference` (when the run validates), each with the same canary. A setting that skips
// (why_a, why_b) leaves the other measured alone; so does one whose call fails or runs out of memory
// (its partner is then measured again, alone, and its note says why).
void measure_pair_unless_skipped(const VersionDesc& desc, const Problem& p, const Environment& env_a, const Environment& env_b,
                                 const MeasureOptions& opts, const std::optional<std::string>& why_a,
                                 const std::optional<std::string>& why_b, const Reference* reference, Result& ra, Result& rb);

}  // namespace knn
