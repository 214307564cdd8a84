#pragma once
// A kd-tree over the reference points, built on the host into flat arrays that the GPU version
// (v11) uploads unchanged. Shared by v10 (CPU search) and v11 (GPU search). Plain C++.
//
// Shape: every internal node splits its points at the median of the dimension of largest spread,
// so the tree is complete: all 2^depth leaves sit at the same depth and hold floor or ceil of
// n / 2^depth points (never more than the requested leaf size). Nodes are in heap order (node i
// has children 2i+1 and 2i+2), so no child pointers are stored; leaf j is node 2^depth - 1 + j.
// The points are copied into leaf order, so a leaf is one contiguous run of rows.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace knn::tree {

struct KdTree {
  int dim = 0;
  int n = 0;
  int depth = 0;  // internal levels; a search stack never holds more than `depth` entries

  std::vector<std::int32_t> split_dim;  // per internal node
  std::vector<float> split_value;       // per internal node: left keys <= value <= right keys
  std::vector<float> box_lo, box_hi;    // per node, dim floats each: tight box of its points
  std::vector<std::int32_t> min_index;  // per node: smallest original index inside (tie pruning)
  std::vector<std::int32_t> leaf_begin; // leaf_count() + 1 row offsets
  std::vector<float> points;            // n rows of dim floats, leaf order
  std::vector<std::int32_t> index;      // original reference index of each row

  int internal_count() const { return (1 << depth) - 1; }
  int leaf_count() const { return 1 << depth; }
  int node_count() const { return (2 << depth) - 1; }
};

// Deepest tree the builder makes (node ids stay in int32); also the host search stack size.
constexpr int kKdMaxDepth = 28;

// Builds the tree with leaves of at most `max_leaf_size` (>= 2) points. `threads` OpenMP threads
// build subtrees in parallel. Throws std::invalid_argument on bad sizes.
KdTree build_kdtree(const float* references, int n, int dim, int max_leaf_size, int threads);
// Host memory of a built tree, an upper bound for leaves of 8 points or more: a leaf-ordered copy
// of the references and their indices, two boxes of dim floats per node (under n / 4 + 2 nodes) and
// the per-node ids. v10 (CPU) and v11 (GPU, host-built) declare it as their working memory.
inline std::size_t kdtree_host_bytes(std::size_t n, std::size_t dim) {
  return 4 * n * dim + 4 * n + 2 * 4 * dim * (n / 4 + 2) + 12 * (n / 4 + 2);
}

// Exact top-k for one query: writes `topk` (index, distance) pairs sorted by (distance, index),
// distances computed exactly as squared_distance() does; (+inf, -1) fills slots past n.
void kdtree_search(const KdTree& tree, const float* query, int topk, std::int32_t* out_indices,
                   float* out_distances);

// Checks the structural invariants (for tests): ranges, boxes, split order, permutation.
// Returns an empty string when they hold, else a description of the first violation.
std::string kdtree_check(const KdTree& tree, const float* references);

}  // namespace knn::tree
