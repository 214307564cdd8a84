#include "kernels/sharded/sharded_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/order.hpp"
#include "core/topk.hpp"

#if KNN_HAVE_MPI
#include <mpi.h>
#endif

namespace knn::sharded {

void cpu_search(const Problem& sub, Neighbors out) {
#pragma omp parallel for schedule(dynamic, 1)
  for (int q = 0; q < sub.m; ++q) bruteforce_one_query(sub, q, out);
}

#if KNN_HAVE_MPI
bool built_with_mpi() { return true; }

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The local search of `sub` into global (distance, index) rows; indices shifted by `first`.
// An empty shard (more ranks than references) has no candidate: (+inf, -1) slots, as v0 leaves.
struct Entry {
  float distance;
  std::int32_t index;  // -1: an empty slot
};

void search_rows(const Problem& sub, int first, const LocalSearch& search, Entry* rows) {
  const std::size_t slots = sub.result_slots();
  if (slots == 0) return;
  std::vector<std::int32_t> indices(slots, -1);
  std::vector<float> distances(slots, std::numeric_limits<float>::infinity());
  if (sub.n > 0) search(sub, Neighbors{indices.data(), distances.data()});
  for (std::size_t s = 0; s < slots; ++s)
    rows[s] = indices[s] < 0 ? Entry{std::numeric_limits<float>::infinity(), -1} : Entry{distances[s], indices[s] + first};
}

void unpack(const Entry* rows, std::size_t slots, Neighbors out) {
  for (std::size_t s = 0; s < slots; ++s) {
    out.indices[s] = rows[s].index;
    out.distances[s] = rows[s].distance;
  }
}

// A piece of the whole problem: m queries over n references; everything else (the values' traits
// that choose the engine's paths) stays the whole problem's. Indices are local to the piece.
Problem piece(const Problem& p, int m, int n, const float* queries, const float* references, bool self_join) {
  Problem s = p;
  s.m = m;
  s.n = n;
  s.queries = queries;
  s.references = references;
  s.self_join = self_join;
  s.shard_begin = 0;
  s.shard_n = -1;
  return s;
}

// The merge operator: `len` row pairs, each row `topk` entries sorted by (distance, index) with
// empty slots last; inout's row becomes the first topk of both. Associative and commutative
// (one total order, disjoint shards), as MPI_Op_create(..., commute = 1) promises.
void merge_rows(void* in, void* inout, int* len, MPI_Datatype* type) {
  int bytes = 0;
  MPI_Type_size(*type, &bytes);
  const int topk = bytes / int(sizeof(Entry));
  thread_local std::vector<Entry> merged;
  merged.resize(std::size_t(topk));
  const auto valid = [](const Entry& e) { return e.index >= 0; };
  for (int r = 0; r < *len; ++r) {
    const Entry* a = static_cast<const Entry*>(in) + std::size_t(r) * topk;
    Entry* b = static_cast<Entry*>(inout) + std::size_t(r) * topk;
    int i = 0, j = 0;
    for (int k = 0; k < topk; ++k) {
      const bool take_a = valid(a[i]) && (!valid(b[j]) || before(a[i].distance, a[i].index, b[j].distance, b[j].index));
      merged[k] = take_a ? a[i++] : b[j++];
    }
    std::copy(merged.begin(), merged.end(), b);
  }
}

MPI_Comm communicator() {  // v18's own: its messages never meet the harness's
  static MPI_Comm comm = [] {
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    return c;
  }();
  return comm;
}

double timeout_s() {
  const char* s = std::getenv("KNN_MPI_TIMEOUT_S");
  const double v = s ? std::atof(s) : 0;
  return v > 0 ? v : 300;
}

// Every rank learns whether one failed; all throw the first failure. The vote is non-blocking and
// polled with a deadline: a rank that never votes (dead or hung) ends the job instead of hanging it.
void agree(const std::optional<std::string>& failure, int rank, int ranks, MPI_Comm comm) {
  int mine = failure ? rank : ranks, first = ranks;
  MPI_Request request;
  MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm, &request);
  const auto t0 = std::chrono::steady_clock::now();
  for (int done = 0; !done;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) break;
    const double waited = ms_since(t0);
    if (waited > 1e3 * timeout_s()) {
      fmt::print(stderr, "knnbench (rank {}): v18: no answer from every rank within {} s (KNN_MPI_TIMEOUT_S); ending the job\n", rank,
                 timeout_s());
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    // Polled without a pause for the first 20 ms (a sub-millisecond call must not wait for a sleep to
    // end), then every 200 us (a slow rank must not cost the others a core).
    if (waited > 20) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (first == ranks) return;
  int length = first == rank ? int(failure->size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  std::string reason = first == rank ? *failure : std::string(std::size_t(length), ' ');
  MPI_Bcast(reason.data(), length, MPI_CHAR, first, comm);
  throw std::runtime_error(fmt::format("rank {} failed: {}", first, reason));
}

struct RowType {  // one answer row, topk entries, as one MPI element
  MPI_Datatype type;
  explicit RowType(int topk) {
    MPI_Type_contiguous(int(topk * sizeof(Entry)), MPI_BYTE, &type);
    MPI_Type_commit(&type);
  }
  ~RowType() { MPI_Type_free(&type); }
};

struct MergeOp {
  MPI_Op op;
  MergeOp() { MPI_Op_create(merge_rows, 1, &op); }
  ~MergeOp() { MPI_Op_free(&op); }
};

// Each rank's `text`, gathered on rank 0 (in rank order); the other ranks get nothing. A rank whose
// engine path repeats rank 0's word for word is said to take the same path.
std::vector<std::string> gather_text(const std::string& text, int rank, int ranks, MPI_Comm comm) {
  int length = int(text.size());
  std::vector<int> lengths(rank == 0 ? ranks : 0), offsets(rank == 0 ? ranks : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm);
  std::string all;
  if (rank == 0) {
    int at = 0;
    for (int r = 0; r < ranks; ++r) offsets[r] = at, at += lengths[r];
    all.resize(std::size_t(at));
  }
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, comm);
  std::vector<std::string> said;
  for (int r = 0; r < int(lengths.size()); ++r) said.push_back(all.substr(std::size_t(offsets[r]), std::size_t(lengths[r])));
  // "local X ms, [phases]: path": a path equal to rank 0's is not repeated.
  const auto path_of = [](const std::string& s) { const auto at = s.find("]: "); return at == std::string::npos ? std::string() : s.substr(at + 3); };
  for (std::size_t r = 1; r < said.size(); ++r)
    if (!path_of(said[r]).empty() && path_of(said[r]) == path_of(said[0]))
      said[r] = said[r].substr(0, said[r].size() - path_of(said[r]).size()) + "the same path as rank 0";
  return said;
}

}  // namespace

void query(const Problem& p, Neighbors out, RunContext& ctx, const LocalSearch& search, const std::string& engine,
           const LocalDetail& detail) {
  using clock = std::chrono::steady_clock;
  const int rank = ctx.env.rank, ranks = ctx.env.ranks, topk = p.topk;
  if (ranks == 1) {  // not under mpirun (or -np 1): the whole problem is this rank's
    const auto t0 = clock::now();
    search(p, out);
    ctx.timing.add("local", ms_since(t0));
    ctx.path = fmt::format("1 rank: {} alone", engine) + (detail ? ": " + detail() : std::string());
    return;
  }
  const MPI_Comm comm = communicator();
  const Shard mine{p.shard_begin, p.local_n()};
  const RowType row(topk);
  const MergeOp merge;
  double local_ms = 0, wait_ms = 0, merge_ms = 0;
  const auto block_of = [&](int b) { return p.self_join ? shard_of(p.n, b, ranks) : shard_of(p.m, b, ranks); };
  const Shard owned_block = block_of(rank);
  std::vector<Entry> owned(std::size_t(owned_block.size) * topk), partial;
  std::vector<float> visiting;  // a self-join's block of another rank
  std::vector<int> counts(ranks), offsets(ranks);  // the query blocks, for the reduce-scatter and the gather
  for (int r = 0; r < ranks; ++r) counts[r] = block_of(r).size, offsets[r] = block_of(r).first;
  if (!p.self_join) {  // every rank holds the queries: one local search over all of them
    const auto t0 = clock::now();
    partial.resize(p.result_slots());
    std::optional<std::string> failure;
    try {
      search_rows(piece(p, p.m, mine.size, p.queries, p.references, false), mine.first, search, partial.data());
    } catch (const std::exception& e) {
      failure = e.what();
    }
    local_ms += ms_since(t0);
    const auto t1 = clock::now();
    agree(failure, rank, ranks, comm);
    wait_ms += ms_since(t1);
    const auto t2 = clock::now();  // every block's merge at once, each on its owner
    MPI_Reduce_scatter(partial.data(), owned.data(), counts.data(), row.type, merge.op, comm);
    merge_ms += ms_since(t2);
  }
  for (int b = 0; p.self_join && b < ranks; ++b) {  // block b is rank b's shard: rank b sends it, every rank searches it
    const Shard block = block_of(b);
    if (block.size == 0) continue;  // fewer points than ranks: every rank skips the same blocks
    auto t0 = clock::now();
    visiting.resize(std::size_t(block.size) * p.dim);
    float* points = b == rank ? const_cast<float*>(p.references) : visiting.data();
    MPI_Bcast(points, block.size * p.dim, MPI_FLOAT, b, comm);
    merge_ms += ms_since(t0);
    t0 = clock::now();
    partial.resize(std::size_t(block.size) * topk);
    std::optional<std::string> failure;
    try {  // its own shard is a self-join of the shard; any other is a plain search
      search_rows(piece(p, block.size, mine.size, points, p.references, b == rank), mine.first, search, partial.data());
    } catch (const std::exception& e) {
      failure = e.what();
    }
    local_ms += ms_since(t0);
    t0 = clock::now();
    agree(failure, rank, ranks, comm);
    wait_ms += ms_since(t0);
    t0 = clock::now();
    MPI_Reduce(partial.data(), b == rank ? owned.data() : nullptr, block.size, row.type, merge.op, b, comm);
    merge_ms += ms_since(t0);
  }
  const auto t0 = clock::now();
  std::vector<Entry> answer(rank == 0 ? p.result_slots() : 0);
  MPI_Gatherv(owned.data(), owned_block.size, row.type, answer.data(), counts.data(), offsets.data(), row.type, 0, comm);
  if (rank == 0) unpack(answer.data(), answer.size(), out);
  ctx.timing.add("gather", ms_since(t0));
  ctx.timing.add("local", local_ms);
  ctx.timing.add("wait", wait_ms);  // for the slowest rank's local search (and the failure vote)
  ctx.timing.add("merge", merge_ms);
  // Each rank's local time and engine detail, gathered on rank 0 (which alone writes the path).
  const std::vector<std::string> ranks_said =
      gather_text(fmt::format("{}local {:.3f} ms{}", ctx.devices_used.empty() ? "CPU, " : "", local_ms, detail ? ", " + detail() : ""), rank, ranks, comm);
  if (rank != 0) return;
  const auto on_cpu = std::count_if(ranks_said.begin(), ranks_said.end(), [](const std::string& t) { return t.rfind("CPU, ", 0) == 0; });
  ctx.path = fmt::format("{} ranks ({} on a GPU, {} on the CPU), rank 0 with {}; {}partial top-{} lists merged per query block on "
                         "its owner ({}, merge operator), answer gathered on rank 0 (MPI_Gatherv)",
                         ranks, ranks - on_cpu, on_cpu, engine, p.self_join ? "self-join: each shard broadcast in turn as a query block; " : "",
                         topk, p.self_join ? "MPI_Reduce after each block's search" : "every block at once: MPI_Reduce_scatter");
  for (int r = 0; r < int(ranks_said.size()); ++r) ctx.path += fmt::format("; rank {}: {}", r, ranks_said[r]);
}
#endif

}  // namespace knn::sharded

#if !KNN_HAVE_MPI
// Defined by their qualified names: a definition that no longer matches the header's declaration does not compile
// (an unqualified one would be a new overload, and the build without MPI would fail only when linking).
bool knn::sharded::built_with_mpi() { return false; }

void knn::sharded::query(const Problem&, Neighbors, RunContext&, const LocalSearch&, const std::string&, const LocalDetail&) {
  throw std::logic_error("v18: built without MPI");  // supports() said so: never called
}
#endif
