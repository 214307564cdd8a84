#pragma once
// The JSON test matrix: a list of cases (dim `k`, queries `m`, references `n`, neighbour count
// `topk`, data distribution and seed), grouped for selection with --group.
#include <cstdint>
#include <string>
#include <vector>

#include "data.hpp"

namespace knn {

struct Case {
  int id = 0;
  int dim = 0;   // "k" in the matrix
  int m = 0;     // queries
  int n = 0;     // references
  int topk = 1;  // neighbour count
  Distribution distribution = Distribution::uniform;
  std::uint64_t seed = 0;
  std::vector<std::string> groups;
  std::string description;
};

struct Matrix {
  std::string file;      // path as given
  std::string checksum;  // of the file's bytes
  int schema_version = 1;
  std::vector<Case> cases;
};

inline constexpr int kMatrixSchemaVersion = 1;
inline constexpr std::uint64_t kDefaultSeed = 20240607;

// Loads and checks a matrix. Every problem throws ConfigError naming the file, the JSON path,
// the offending value and what was expected.
Matrix load_matrix(const std::string& path);
Matrix parse_matrix(const std::string& text, const std::string& file_label);

}  // namespace knn
