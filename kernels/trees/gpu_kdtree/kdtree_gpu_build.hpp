#pragma once
// A balanced kd-tree built entirely on the GPU (v16, after seed 004; kd_leaves.hpp has the leaf
// plan). The padded references (padding rows at +inf, index -1) are split level by level, every node
// of a level at once, at the median of the node's dimension of largest spread; the split value of a
// node is the first coordinate of its upper half. Nothing goes back to the host between levels. Two
// builds give trees of the same shape (the same rows in each node wherever coordinates differ; ties
// at a median may go either way):
// - by sorts (build_device, kdtree_gpu_build.cu): per level a kernel finds each node's box, the keys'
//   kernel picks the split dimension, one CUB radix sort orders the rows of every node by (node,
//   coordinate) (or a segmented sort each node's coordinates, where the nodes are small), and a gather
//   moves the rows;
// - from presorted lists (build_device_lists, kdtree_gpu_build_lists.cu): one radix sort orders the
//   rows along every dimension at the start, and each level then only partitions those lists stably
//   (a flag per row and one scan), so that every node's rows stay sorted along every dimension and
//   its box, split dimension and split value are read off the ends and the middle of its lists.
// The tree is arrays in heap order (node v: children 2v + 1, 2v + 2; leaf j is node L - 1 + j and
// holds rows [j S, (j + 1) S)). CUDA builds only.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cuda/buffers.hpp"
#include "kernels/trees/gpu_kdtree/kd_leaves.hpp"

namespace knn::kd {

struct DeviceKdTree {
  LeafPlan plan;
  int dim = 0;
  cuda::StreamBuffer<float> points;        // padded x dim, row-major, leaf after leaf
  cuda::StreamBuffer<std::int32_t> index;  // padded: the reference row, -1 for padding
  cuda::StreamBuffer<float> lo, hi;        // nodes x dim: each node's box over its real rows (empty: +inf, -inf)
  cuda::StreamBuffer<std::int32_t> split_dim;  // internal nodes (at least one slot)
  cuda::StreamBuffer<float> split;             // rows of the lower half <= split <= rows of the upper half
  // The boxes again for the search, packed: node v's lo at box + 2 v box_pad(dim), its hi box_pad(dim)
  // floats on, each rounded up to whole float4s (one 32-byte sector per node at k <= 4).
  cuda::StreamBuffer<float> box;
};

inline int box_pad(int dim) { return (dim + 3) / 4 * 4; }

// Enqueues the build of the tree of n device rows (row-major n x dim) on `stream`. A level whose nodes
// hold at most segment_rows rows sorts each node as a segment of its own (cub::DeviceSegmentedSort
// of the coordinates) instead of one radix sort of (node, coordinate) keys over all rows (0: never).
DeviceKdTree build_device(const float* points, const LeafPlan& plan, int dim, std::int64_t segment_rows, cudaStream_t stream);

// The same tree from presorted lists (dim x padded must stay below 2^31: lists_fit in kd_leaves.hpp).
DeviceKdTree build_device_lists(const float* points, const LeafPlan& plan, int dim, cudaStream_t stream);

// Device bytes either build allocates, at most (tree plus scratch).
std::size_t device_bytes(const LeafPlan& plan, int dim);

// The tree of n host rows built on the current device and brought back (tests): lists picks the
// build. Every array as in DeviceKdTree.
struct HostKdTree {
  LeafPlan plan;
  std::vector<float> points, lo, hi, split, box;
  std::vector<std::int32_t> index, split_dim;
};
HostKdTree build_on_device(const float* host_points, const LeafPlan& plan, int dim, bool lists, std::int64_t segment_rows);

}  // namespace knn::kd
