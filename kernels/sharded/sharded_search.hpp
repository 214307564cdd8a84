#pragma once
// v18's search over references sharded across MPI ranks (each rank holds rows
// [p.shard_begin, p.shard_begin + p.local_n()) of the n references):
//  1. local search: each rank answers every query over its shard alone (the engine it is given);
//  2. merge: the partial top-k lists of query block b (the queries split in one block per rank)
//     are merged on rank b by an MPI_Reduce whose operator merges two sorted (distance, index)
//     rows; in a self-join the queries are the shards, so block b is rank b's shard, broadcast by
//     rank b before the ranks search it (no rank ever holds more than its shard and one block);
//  3. gather: rank 0 gathers the merged blocks (MPI_Gatherv) into the answer.
// Phases: local (the local searches), wait (for the slowest rank, after each local search: load
// imbalance), merge (the reductions, and a self-join's block broadcasts), gather.
// A rank whose local search throws does not leave the others waiting: after each local search the
// ranks agree on success, and all throw "rank R: reason" together. A rank that stops answering
// (dead, hung) makes the others abort the job after KNN_MPI_TIMEOUT_S seconds (default 300).
#include <functional>
#include <string>

#include "core/problem.hpp"
#include "core/registry.hpp"

namespace knn::sharded {

// Answers `sub` (a block of queries over this rank's shard; indices local to the shard) into out.
using LocalSearch = std::function<void(const Problem& sub, Neighbors out)>;

// The CPU engine: v0's row (core/topk.hpp) for each query, the queries spread over OpenMP threads.
void cpu_search(const Problem& sub, Neighbors out);

// What this rank's local engine did in the call just made (its own path and phases), for ctx.path.
using LocalDetail = std::function<std::string()>;

// The whole query on this rank; rank 0's `out` receives the answer. `engine` names the local
// engine in ctx.path; `detail` (optional) says per rank what it did: rank 0 gathers every rank's
// local time and detail into ctx.path, so that a slow rank explains itself. Each local search gets
// the whole problem's traits (p.values: the harness examines every rank's values), so the engine
// takes the paths it takes for that shape on one GPU. With one rank (ctx.env.ranks == 1) it is the
// local search alone.
void query(const Problem& p, Neighbors out, RunContext& ctx, const LocalSearch& search, const std::string& engine,
           const LocalDetail& detail = {});

// Whether this build can run it: "built without MPI" otherwise.
bool built_with_mpi();

}  // namespace knn::sharded
