#pragma once
#include <cstdint>
#include <cstddef>

namespace knn {

// What the harness found in the values when it made or read them, before any timed call, as a
// file's element type is known before it is searched: whether every coordinate of the queries and
// the references is a whole number, and the range of all of them. A version may take an exact
// integer path from it (v15: int8 tensor cores); `known` false means nobody looked.
struct ValueTraits {
  bool known = false;
  bool whole = false;     // every value is an integer (finite, no fraction)
  float lowest = 0.f;     // the smallest and the largest value, queries and references together
  float highest = 0.f;    // (0 and 0 unless every value is finite)
  bool finite = false;    // no value is infinite or NaN
};

// Scans the queries (query_floats values) and the references (reference_floats): OpenMP over the
// values; the queries may be the references themselves (a self-join: pass query_floats 0).
ValueTraits examine_values(const float* queries, std::size_t query_floats, const float* references,
                           std::size_t reference_floats);

// One exact kNN problem. `dim` is the matrix's `k`; `topk` is the neighbour count.
// Queries are m × dim and references n × dim, both row-major float32 in host memory
// (pinned when the harness runs with --host-memory pinned).
struct Problem {
  int dim = 0;
  int m = 0;
  int n = 0;
  int topk = 1;
  const float* queries = nullptr;
  const float* references = nullptr;
  // A self-join: `queries` and `references` are the same n points (m == n), and point q is never
  // its own neighbour; other points at the same place are neighbours at distance 0.
  bool self_join = false;
  // Under mpirun, a version that shards the references sees only its rank's rows: `references`
  // holds rows [shard_begin, shard_begin + shard_n) of the n (in a self-join `queries` too, the
  // same rows); indices in answers stay global. shard_n < 0: all n rows are here.
  int shard_begin = 0;
  int shard_n = -1;
  int local_n() const { return shard_n < 0 ? n : shard_n; }
  // Whole numbers and their range, when the harness examined the values (the runner does).
  ValueTraits values;

  std::size_t query_floats() const { return std::size_t(m) * std::size_t(dim); }
  std::size_t reference_floats() const { return std::size_t(n) * std::size_t(dim); }
  std::size_t result_slots() const { return std::size_t(m) * std::size_t(topk); }
};

// The rows of `count` that rank `rank` of `ranks` holds: [first, first + size), balanced within one.
struct Shard {
  int first = 0, size = 0;
};
inline Shard shard_of(int count, int rank, int ranks) {
  const auto at = [&](int r) { return int((long long)count * r / ranks); };
  return Shard{at(rank), at(rank + 1) - at(rank)};
}

// Where a version writes its answer: m × topk reference indices, each row sorted by
// increasing distance (ties by increasing index), and the squared distances it computed.
// The harness poisons both before every call, so an unwritten slot is caught.
struct Neighbors {
  std::int32_t* indices = nullptr;
  float* distances = nullptr;
};

}  // namespace knn
