#include <cmath>
#include <cstddef>

#include "core/problem.hpp"

namespace knn {
namespace {

struct Scan {
  bool whole = true;
  float lowest = INFINITY, highest = -INFINITY;
};

void scan(const float* x, std::size_t count, Scan& s) {
  bool whole = s.whole;
  float lowest = s.lowest, highest = s.highest;
#pragma omp parallel for reduction(&& : whole) reduction(min : lowest) reduction(max : highest) schedule(static)
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(count); ++i) {
    const float v = x[i];
    whole = whole && std::isfinite(v) && std::trunc(v) == v;
    lowest = std::fmin(lowest, v);
    highest = std::fmax(highest, v);
  }
  s.whole = whole, s.lowest = lowest, s.highest = highest;
}

}  // namespace

ValueTraits examine_values(const float* queries, std::size_t query_floats, const float* references,
                           std::size_t reference_floats) {
  Scan s;
  if (query_floats > 0) scan(queries, query_floats, s);
  if (reference_floats > 0) scan(references, reference_floats, s);
  ValueTraits t;
  t.known = true;
  t.whole = s.whole && query_floats + reference_floats > 0;
  t.lowest = t.whole ? s.lowest : 0.f;
  t.highest = t.whole ? s.highest : 0.f;
  return t;
}

}  // namespace knn
