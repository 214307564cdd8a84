#pragma once
// A balanced kd-tree built entirely on the GPU (v16, after seed 004; kd_leaves.hpp has the leaf
// plan). The padded references (padding rows at +inf, index -1) are split level by level, every node
// of a level at once: one kernel finds each node's box, the keys' kernel picks the dimension of
// largest spread, one CUB radix sort orders the rows of every node by (node, coordinate) (or a
// segmented sort each node's coordinates, where the nodes are small), and a gather moves the rows
// and writes the split value of each node: the first coordinate of its upper half. Nothing goes back to
// the host between levels. The tree is arrays in heap order (node v: children 2v + 1, 2v + 2; leaf
// j is node L - 1 + j and holds rows [j S, (j + 1) S)). CUDA builds only.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

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

// Device bytes build_device allocates, at most (tree plus scratch).
std::size_t device_bytes(const LeafPlan& plan, int dim);

}  // namespace knn::kd
