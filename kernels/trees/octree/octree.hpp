#pragma once
// An octree over 3-D reference points, built on the host into flat arrays that the GPU version
// (v13) uploads unchanged. Shared by v12 (CPU search) and v13 (GPU search). Plain C++.
//
// A cell splits into up to 8 children around the centre of its points' bounding box (the centre
// of their bounding cube); only non-empty children are stored, contiguously and in octant order.
// Splitting stops at leaves of at most `max_leaf_size` points, at kOctreeMaxDepth, when all points
// of a cell are equal, or when rounding puts them all on one side of the centre, so duplicates
// can never split forever (such cells become larger leaves). Each node keeps the tight box of its
// points, which is what the search prunes with, so the choice of centre never affects exactness.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace knn::tree {

// Deepest level a node can be at; also bounds a search's frame stack (one frame per level).
constexpr int kOctreeMaxDepth = 24;

// 32 bytes, two 16-byte halves (the GPU loads each as one float4).
struct alignas(16) OctreeNode {
  float lo[3];
  std::int32_t first;  // internal: first child's node id; leaf: first row in points
  float hi[3];
  std::int32_t count;  // leaf: number of rows (> 0); internal: -(number of children), -8 .. -2
};
static_assert(sizeof(OctreeNode) == 32, "OctreeNode must stay 32 bytes");

struct Octree {
  int n = 0;
  int depth = 0;                         // deepest level reached (root is level 0)
  std::vector<OctreeNode> nodes;         // node 0 is the root; children after their parent
  std::vector<std::int32_t> min_index;   // per node: smallest original index inside (tie pruning)
  std::vector<float> points;             // n rows of 3 floats, leaf order
  std::vector<std::int32_t> index;       // original reference index of each row
};

// Builds the octree of `n` points of 3 floats. `threads` OpenMP threads split the cells of a level.
Octree build_octree(const float* references, int n, int max_leaf_size, int threads);
// Host memory of a built tree: a leaf-ordered copy of the references (12 bytes a point) and their
// indices; at most 2n - 1 nodes (leaves non-empty, internal nodes 2 to 8 children) of 32 bytes plus
// a per-node id. v12 (CPU) and v13 (GPU, host-built) declare it as their working memory.
inline std::size_t octree_host_bytes(std::size_t n) { return 16 * n + 36 * (2 * n); }

// Exact top-k for one query, same contract as kdtree_search().
void octree_search(const Octree& tree, const float* query, int topk, std::int32_t* out_indices,
                   float* out_distances);

// Checks the structural invariants (for tests); empty when they hold.
std::string octree_check(const Octree& tree, const float* references, int max_leaf_size);

}  // namespace knn::tree
