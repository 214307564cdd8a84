#pragma once
// The JSON test matrix: a list of cases (dim `k`, queries `m`, references `n`, neighbour count
// `topk`, data distribution and seed, optionally a self-join), grouped for selection with --group.
#include <cstdint>
#include <map>
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
  // Point sets read from data files instead of generated (empty: generated from distribution
  // and seed). *_file as written in the matrix (the results record it); *_path resolved
  // against the matrix file's folder (what the runner opens).
  std::string queries_file, references_file;
  std::string queries_path, references_path;
  // "fetch": the command that fetches the case's data files (e.g. "scripts/setup/fetch-data.sh cities").
  // With it, a data file that does not exist skips the case (missing_data says why and how to
  // fetch it) instead of refusing the matrix.
  std::string fetch, missing_data;
  // "ground_truth_file": published neighbours to validate against as well as v0 (an int32 .npy of
  // m rows, at least topk columns, sorted by distance). An HDF5 queries file's "neighbors" serve
  // without it.
  std::string ground_truth_file, ground_truth_path;
  std::uint32_t integer_max = kDefaultIntegerMax;  // "max": the integers distribution draws from [0, max)
  // "self_join": the references are the queries (m = n, one point set); a point is never its own
  // neighbour, other points at the same place are neighbours at distance 0.
  bool self_join = false;
  // "validate_queries": validate this many queries spread over m by default (large cases whose full
  // reference would take hours); 0 = every query. --validate-queries overrides it.
  int validate_queries = 0;
  // "params": the versions' parameters this case runs with, as `--param` writes them
  // ("v16.test=box,median"): the file's "params" and then the case's own (which wins).
  std::vector<std::string> param_specs;
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
// the offending value and what was expected. Data files a case names are opened and their shape
// (only: header and size) checked against k and m or n; relative paths are resolved against the
// folder of `path` (of `file_label` for parse_matrix).
Matrix load_matrix(const std::string& path);
Matrix parse_matrix(const std::string& text, const std::string& file_label);

// A one-case matrix from the command line (--k 16 --m 1024 --n 1e6 --topk 8 --self-join
// --distribution clusters): `fields` maps a case field of the matrix schema (k, m, n, topk,
// self_join, distribution) to the flag's text. The matrix loader checks it, and its messages name
// the flag ("--n 0: expected ..."). Whole numbers may be written as 1e6. The case is id 0 in group
// "adhoc"; the matrix's file is "command line".
inline constexpr const char* kAdhocMatrixFile = "command line";
Matrix adhoc_matrix(const std::map<std::string, std::string>& fields);

}  // namespace knn
