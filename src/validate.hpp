#pragma once
// Validation of a version's answer against the reference (v0's algorithm).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/problem.hpp"

namespace knn {

// Relative tolerance on true (double) squared distances: float accumulation over up to a few
// hundred dimensions in another order stays far inside it.
inline constexpr double kDistanceRtol = 1e-5;
// Absolute floor, for distances at or near zero (duplicate points).
inline constexpr double kDistanceAtol = 1e-9;

struct ValidationReport {
  bool pass = true;
  long long checked = 0;        // neighbour slots compared (m·topk, or fewer when sampled)
  long long queries_checked = 0;
  long long mismatches = 0;     // slots whose true distance differs from the reference's
  long long ties_accepted = 0;  // slots with another index at an equal true distance
  long long invalid = 0;        // out-of-range or duplicate indices, or unsorted rows
  long long wrong_queries = 0;  // queries with at least one mismatched or invalid slot
  // Slots whose neighbour is among the true topk: a valid, unique index (not the query itself in a
  // self-join) whose true distance is at most the reference's topk-th (within tolerance, so ties
  // count). recall() = found / checked: recall@topk against the reference.
  long long found = 0;
  long long wrong_neighbors() const { return checked - found; }
  double recall() const { return checked > 0 ? double(found) / double(checked) : 1.0; }
  double max_rel_error = 0;     // over slots, |d_version − d_reference| / d_reference (true distances)
  std::string first_problem;    // a readable description of the first failure
  // What the answer was checked against: "v0 reference", and "v0 reference + neighbors of FILE"
  // when the data file also holds published ground truth (an ann-benchmarks HDF5 file).
  std::string ground_truth = "v0 reference";
};

// The reference answer: v0's per-query loop, parallelised over queries with OpenMP. Every query
// runs exactly the serial arithmetic, so the output is bit-identical to v0's.
void compute_reference(const Problem& p, Neighbors out);

// Checks `indices` (m × topk) against the reference. True distances are recomputed in double from
// the inputs; distances a version returns are not trusted. For each query the sorted true
// distances must match within tolerance, every index must be in [0, n) and unique in its row,
// the row must be in increasing distance order, and in a self-join no row may hold its own query.
ValidationReport validate_neighbors(const Problem& p, const std::int32_t* reference_indices, const std::int32_t* indices);

// A reference answer for some or all queries of a problem.
struct Reference {
  std::vector<int> rows;              // the queries covered, ascending
  std::vector<std::int32_t> indices;  // rows.size() × topk
  // Ground truth from the data file (every query), checked as well by validate_all; its name.
  const Reference* also = nullptr;
  std::string name = "v0 reference";
  // Set when the problem does not hold every reference (sharded under mpirun): writes reference
  // point `index` (dim floats) to `out`. Validation then takes references, and a self-join's
  // queries (the same points), from here instead of the problem.
  std::function<void(std::int32_t index, float* out)> reference_point;
  bool sampled(const Problem& p) const { return int(rows.size()) < p.m; }
};

// The reference for every query, or, when 0 < max_queries < m, for max_queries queries spread
// evenly over [0, m) (the first and the last included): for cases whose full reference would take
// hours. The results record how many queries were checked.
Reference compute_reference(const Problem& p, int max_queries);
ValidationReport validate_neighbors(const Problem& p, const Reference& ref, const std::int32_t* indices);
// The queries a reference of at most max_queries rows covers (all when max_queries <= 0 or >= m).
std::vector<int> reference_rows(int m, int max_queries);
// The same reference as compute_reference for a problem whose references are not in memory: they
// arrive in pieces of at most chunk_rows rows from `chunk` (rows [first, first + count) into out),
// each piece also shown to `seen` (a checksum). v0's arithmetic and order, so the same answer;
// in a self-join the queries come from `point`, which the returned Reference keeps.
Reference compute_reference_chunked(const Problem& p, int max_queries, int chunk_rows,
                                    const std::function<void(int first, int count, float* out)>& chunk,
                                    const std::function<void(const float* rows, std::size_t floats)>& seen,
                                    std::function<void(std::int32_t index, float* out)> point);

// Against `ref` and then, when it has one, against ref.also (the same tie rule): the first report
// that fails, else the first, with ground_truth naming both.
ValidationReport validate_all(const Problem& p, const Reference& ref, const std::int32_t* indices);

double true_squared_distance(const Problem& p, int query, std::int32_t reference);

}  // namespace knn
