#pragma once
// Inputs whose squared distances overflow fp32 are refused: every version (v0, the reference,
// included) sums squared differences in float, and an overflow to +inf makes every distance equal,
// so a wrong answer would validate. |q − r| ≤ |q| + |r| per coordinate, so no squared distance
// exceeds (max|q| + max|r|)² · k; over FLT_MAX the case is a ConfigError (exit 2) naming the
// matrix, the case, where the largest value lies (a data file or the generated data) and the value.
#include <string>

#include "matrix.hpp"

namespace knn {

// `queries` holds c.m rows (for a self-join, the references themselves), `references` c.n rows.
void refuse_overflowing_distances(const std::string& matrix_file, const Case& c, const float* queries, const float* references);
// The same check from the largest |value| of the queries (q) and of the references (r), as found
// over every rank's shard under mpirun.
void refuse_overflowing_magnitudes(const std::string& matrix_file, const Case& c, double q, double r);

}  // namespace knn
