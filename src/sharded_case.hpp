#pragma once
// Under mpirun with several ranks, the versions that shard the references (v18) run here: every
// rank generates, or reads from the case's data file, only its rows of the references (and the
// queries whole, or in a self-join nothing more), the values' traits are combined over the ranks,
// and rank 0 streams the references once in pieces, never holding them all in memory, for the
// checksum and the validation reference (PreparedCase::prepare_shard, prepare.hpp, is defined
// here); a rank whose data file fails fails the case's versions on every rank, naming the rank and
// the file; the executor runs each version on every rank in lockstep.
#include <memory>

#include "core/environment.hpp"
#include "executor.hpp"
#include "options.hpp"
#include "prepare.hpp"

namespace knn {

// Rank 0 validates against the case's streamed reference and writes the answers; the other ranks
// only measure (the runner keeps rank 0's results alone).
std::unique_ptr<Executor> make_sharded_executor(PreparedCase& data, const MeasureOptions& measure, const Environment& env);

}  // namespace knn
