#include "validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/topk.hpp"

namespace knn {

void compute_reference(const Problem& p, Neighbors out) {
#pragma omp parallel for schedule(dynamic, 1)
  for (int q = 0; q < p.m; ++q) bruteforce_one_query(p, q, out);
}

namespace {
double exact_squared_distance(const float* a, const float* b, int dim) {
  double s = 0;
  for (int t = 0; t < dim; ++t) {
    const double d = double(a[t]) - double(b[t]);
    s += d * d;
  }
  return s;
}
}  // namespace

double true_squared_distance(const Problem& p, int query, std::int32_t reference) {
  return exact_squared_distance(p.queries + std::size_t(query) * p.dim, p.references + std::size_t(reference) * p.dim, p.dim);
}

namespace {
bool close(double a, double b) { return std::fabs(a - b) <= kDistanceRtol * std::max(std::fabs(a), std::fabs(b)) + kDistanceAtol; }
}  // namespace

std::vector<int> reference_rows(int m, int max_queries) {
  std::vector<int> rows;
  if (max_queries <= 0 || max_queries >= m) {
    rows.resize(m);
    for (int q = 0; q < m; ++q) rows[q] = q;
  } else {
    for (int i = 0; i < max_queries; ++i) rows.push_back(int((long long)i * (m - 1) / (max_queries - 1 > 0 ? max_queries - 1 : 1)));
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  }
  return rows;
}

Reference compute_reference_chunked(const Problem& p, int max_queries, int chunk_rows,
                                    const std::function<void(int first, int count, float* out)>& chunk,
                                    const std::function<void(const float* rows, std::size_t floats)>& seen,
                                    std::function<void(std::int32_t index, float* out)> point) {
  Reference ref;
  ref.rows = reference_rows(p.m, max_queries);
  const std::size_t rows = ref.rows.size(), dim = std::size_t(p.dim);
  ref.indices.resize(rows * p.topk);
  std::vector<float> dist(ref.indices.size()), queries(rows * dim), piece(std::size_t(std::max(1, chunk_rows)) * dim);
  for (std::size_t i = 0; i < rows; ++i) {
    if (p.self_join) point(ref.rows[i], queries.data() + i * dim);
    else std::copy_n(p.queries + std::size_t(ref.rows[i]) * dim, dim, queries.data() + i * dim);
  }
  std::vector<RowTopK> lists;
  lists.reserve(rows);
  for (std::size_t i = 0; i < rows; ++i) lists.emplace_back(ref.indices.data() + i * p.topk, dist.data() + i * p.topk, p.topk);
  // Each row sees the references in index order, as v0's loop does (topk = 1 included: strict <
  // there and the (distance, index) order here keep the same first minimum).
  for (int first = 0; first < p.n; first += chunk_rows) {
    const int count = std::min(chunk_rows, p.n - first);
    chunk(first, count, piece.data());
    if (seen) seen(piece.data(), std::size_t(count) * dim);
#pragma omp parallel for schedule(dynamic, 1)
    for (long long i = 0; i < (long long)rows; ++i) {
      const int self = p.self_join ? ref.rows[i] : -1;
      for (int j = 0; j < count; ++j)
        if (first + j != self) lists[i].offer(squared_distance(queries.data() + i * dim, piece.data() + std::size_t(j) * dim, p.dim), first + j);
    }
  }
  for (auto& list : lists) list.finish();
  ref.reference_point = std::move(point);
  return ref;
}

Reference compute_reference(const Problem& p, int max_queries) {
  Reference ref;
  ref.rows = reference_rows(p.m, max_queries);
  ref.indices.resize(ref.rows.size() * std::size_t(p.topk));
  std::vector<float> dist(ref.indices.size());
  // Row i of the reference answers query rows[i] (v0's loop; in a self-join it leaves rows[i] out).
#pragma omp parallel for schedule(dynamic, 1)
  for (long long i = 0; i < (long long)ref.rows.size(); ++i)
    bruteforce_row(p, ref.rows[i], ref.indices.data() + i * p.topk, dist.data() + i * p.topk);
  return ref;
}

ValidationReport validate_neighbors(const Problem& p, const std::int32_t* ref, const std::int32_t* got) {
  Reference all;
  all.rows.resize(p.m);
  for (int q = 0; q < p.m; ++q) all.rows[q] = q;
  all.indices.assign(ref, ref + p.result_slots());
  return validate_neighbors(p, all, got);
}

namespace {
// The slots of one answer row that hold a true neighbour: in range, not repeated, not the query
// itself in a self-join, and no farther than the reference's topk-th neighbour (within tolerance).
template <class Distance>
long long found_in_row(const Problem& p, int q, const std::int32_t* rq, const std::int32_t* gq, Distance& distance) {
  double threshold = 0;
  for (int j = 0; j < p.topk; ++j) threshold = std::max(threshold, distance(q, rq[j]));
  long long n = 0;
  for (int j = 0; j < p.topk; ++j) {
    if (gq[j] < 0 || gq[j] >= p.n || (p.self_join && gq[j] == q) || std::find(gq, gq + j, gq[j]) != gq + j) continue;
    const double d = distance(q, gq[j]);
    if (d <= threshold || close(d, threshold)) ++n;
  }
  return n;
}
}  // namespace

ValidationReport validate_neighbors(const Problem& p, const Reference& reference, const std::int32_t* got) {
  ValidationReport r;
  r.checked = (long long)reference.rows.size() * p.topk;
  r.queries_checked = (long long)reference.rows.size();
  long long mismatches = 0, ties = 0, invalid = 0, wrong_queries = 0, found = 0;
  double max_rel = 0;
  std::string first;
  auto note = [&first](const std::string& s) {
#pragma omp critical(knn_validate_note)
    if (first.empty()) first = s;
  };
#pragma omp parallel reduction(+ : mismatches, ties, invalid, wrong_queries, found) reduction(max : max_rel)
  {
    std::vector<double> want(p.topk), have(p.topk);
    // Sharded references: the points are fetched (queries too in a self-join), else read in place.
    std::vector<float> query_point(reference.reference_point ? p.dim : 0), reference_point(query_point.size());
    auto distance = [&](int q, std::int32_t index) {
      if (!reference.reference_point) return true_squared_distance(p, q, index);
      if (p.self_join) reference.reference_point(q, query_point.data());
      else std::copy_n(p.queries + std::size_t(q) * p.dim, p.dim, query_point.data());
      reference.reference_point(index, reference_point.data());
      return exact_squared_distance(query_point.data(), reference_point.data(), p.dim);
    };
    std::vector<std::int32_t> sorted(p.topk);
#pragma omp for schedule(dynamic, 16)
    for (long long i = 0; i < (long long)reference.rows.size(); ++i) {
      const int q = reference.rows[i];
      const std::int32_t* rq = reference.indices.data() + std::size_t(i) * p.topk;
      const std::int32_t* gq = got + std::size_t(q) * p.topk;
      const long long before = mismatches + invalid;
      bool row_valid = true;
      for (int j = 0; j < p.topk; ++j) {
        if (gq[j] < 0 || gq[j] >= p.n) {
          ++invalid;
          row_valid = false;
          note(fmt::format("query {} slot {}: index {} out of range [0, {})", q, j, gq[j], p.n));
        }
      }
      if (!row_valid) {
        ++wrong_queries;
        found += found_in_row(p, q, rq, gq, distance);
        continue;
      }
      if (p.self_join && std::find(gq, gq + p.topk, std::int32_t(q)) != gq + p.topk) {
        ++invalid;
        note(fmt::format("query {}: answers itself (slot {}) in a self-join", q, std::find(gq, gq + p.topk, std::int32_t(q)) - gq));
        ++wrong_queries;
        found += found_in_row(p, q, rq, gq, distance);
        continue;
      }
      std::copy(gq, gq + p.topk, sorted.begin());
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
        ++invalid;
        note(fmt::format("query {}: duplicate index {} in its top-{}", q, *std::adjacent_find(sorted.begin(), sorted.end()), p.topk));
        ++wrong_queries;
        found += found_in_row(p, q, rq, gq, distance);
        continue;
      }
      for (int j = 0; j < p.topk; ++j) {
        want[j] = distance(q, rq[j]);
        have[j] = distance(q, gq[j]);
      }
      // The row must come sorted by distance (ties in either order are equal within tolerance).
      for (int j = 1; j < p.topk; ++j) {
        if (have[j] < have[j - 1] && !close(have[j], have[j - 1])) {
          ++invalid;
          note(fmt::format("query {}: slot {} (distance {:.9g}) is closer than slot {} ({:.9g}): row not sorted", q, j, have[j], j - 1, have[j - 1]));
          break;
        }
      }
      std::vector<double> have_sorted = have;
      std::sort(want.begin(), want.end());
      std::sort(have_sorted.begin(), have_sorted.end());
      for (int j = 0; j < p.topk; ++j) {
        const double rel = want[j] > 0 ? std::fabs(have_sorted[j] - want[j]) / want[j] : std::fabs(have_sorted[j] - want[j]);
        max_rel = std::max(max_rel, rel);
        if (!close(have_sorted[j], want[j])) {
          ++mismatches;
          note(fmt::format("query {} rank {}: true distance {:.9g}, reference {:.9g} (index {} vs {})", q, j, have_sorted[j], want[j], gq[j], rq[j]));
        } else if (gq[j] != rq[j]) {
          ++ties;
        }
      }
      if (mismatches + invalid != before) {
        ++wrong_queries;
        found += found_in_row(p, q, rq, gq, distance);
      } else {
        found += p.topk;
      }
    }
  }
  r.mismatches = mismatches;
  r.ties_accepted = ties;
  r.invalid = invalid;
  r.wrong_queries = wrong_queries;
  r.found = found;
  r.max_rel_error = max_rel;
  r.first_problem = first;
  r.pass = mismatches == 0 && invalid == 0;
  return r;
}

ValidationReport validate_all(const Problem& p, const Reference& ref, const std::int32_t* indices) {
  auto named = [&p](const Reference& x) { return x.sampled(p) ? fmt::format("{} ({} of {} queries)", x.name, x.rows.size(), p.m) : x.name; };
  ValidationReport r = validate_neighbors(p, ref, indices);
  r.ground_truth = named(ref);
  if (!r.pass || !ref.also) return r;
  // Both pass: the report of the one that covers more queries, naming both.
  ValidationReport second = validate_neighbors(p, *ref.also, indices);
  second.ground_truth = named(ref) + " + " + named(*ref.also);
  if (!second.pass || second.queries_checked > r.queries_checked) return second;
  r.ground_truth = second.ground_truth;
  return r;
}

}  // namespace knn
