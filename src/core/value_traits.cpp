#include <cmath>
#include <cstddef>

#include "core/problem.hpp"

namespace knn {
namespace {

struct Scan {
  bool whole = true, finite = true;
  float lowest = INFINITY, highest = -INFINITY;
};

void scan(const float* x, std::size_t count, Scan& s) {
  bool whole = s.whole, finite = s.finite;
  float lowest = s.lowest, highest = s.highest;
#pragma omp parallel for reduction(&& : whole, finite) reduction(min : lowest) reduction(max : highest) schedule(static)
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(count); ++i) {
    const float v = x[i];
    const bool f = std::isfinite(v);
    finite = finite && f;
    whole = whole && f && std::trunc(v) == v;
    lowest = std::fmin(lowest, v);
    highest = std::fmax(highest, v);
  }
  s.whole = whole, s.finite = finite, s.lowest = lowest, s.highest = highest;
}

}  // namespace

ValueTraits examine_values(const float* queries, std::size_t query_floats, const float* references,
                           std::size_t reference_floats) {
  Scan s;
  if (query_floats > 0) scan(queries, query_floats, s);
  if (reference_floats > 0) scan(references, reference_floats, s);
  ValueTraits t;
  t.known = true;
  t.finite = s.finite && query_floats + reference_floats > 0;
  t.whole = s.whole && t.finite;
  t.lowest = t.finite ? s.lowest : 0.f;
  t.highest = t.finite ? s.highest : 0.f;
  return t;
}

}  // namespace knn
