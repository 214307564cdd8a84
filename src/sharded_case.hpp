#pragma once
// Under mpirun with several ranks, the versions that shard the references (v18) run here: every
// rank generates only its rows of the references (and the queries, or in a self-join nothing
// more), and rank 0 streams the references once in pieces, never holding them all, for the
// checksum and the validation reference.
#include <functional>
#include <vector>

#include "core/environment.hpp"
#include "core/registry.hpp"
#include "matrix.hpp"
#include "options.hpp"
#include "result.hpp"

namespace knn {

// Runs `versions` on case `c` on every rank in lockstep. Only rank 0 calls `announce` and
// `finish` (the reporters); `base` holds the case fields of a result.
void run_sharded_versions(const Matrix& mx, const Case& c, const std::vector<const VersionDesc*>& versions,
                          const Environment& env, const MeasureOptions& measure, int validate_queries, const Result& base,
                          const std::function<void(const VersionDesc&)>& announce, const std::function<void(Result)>& finish);

}  // namespace knn
