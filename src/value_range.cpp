#include "value_range.hpp"

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <cstddef>

#include "core/errors.hpp"

namespace knn {
namespace {

double largest_magnitude(const float* x, std::size_t count) {
  float top = 0;
  for (std::size_t i = 0; i < count; ++i) top = std::max(top, std::abs(x[i]));
  return double(top);
}

}  // namespace

void refuse_overflowing_distances(const std::string& matrix_file, const Case& c, const float* queries, const float* references) {
  const double q = largest_magnitude(queries, std::size_t(c.m) * c.dim);
  refuse_overflowing_magnitudes(matrix_file, c, q, c.self_join ? q : largest_magnitude(references, std::size_t(c.n) * c.dim));
}

void refuse_overflowing_magnitudes(const std::string& matrix_file, const Case& c, double q, double r) {
  const double bound = (q + r) * (q + r) * double(c.dim);
  if (bound <= double(FLT_MAX)) return;
  const bool in_queries = q >= r;
  const std::string& file = in_queries && !c.self_join ? c.queries_file : c.references_file;
  const std::string where =
      file.empty() ? fmt::format("the generated {} ({})", in_queries ? "queries" : "references", to_string(c.distribution))
                   : fmt::format("{} {}", in_queries && !c.self_join ? "queries_file" : "references_file", file);
  throw ConfigError(fmt::format("{}: case {}: {} holds |value| {:g}: squared distances can reach ({:g} + {:g})² · k {} = {:g}, over the float "
                                "maximum {:g}, so they would overflow to inf; scale the data down",
                                matrix_file, c.id, where, in_queries ? q : r, q, r, c.dim, bound, double(FLT_MAX)));
}

}  // namespace knn
