#pragma once
// A balanced kd-tree built entirely on the GPU (v16, after seed 004; kd_leaves.hpp has the leaf
// plan). The padded references (padding rows at +inf, index -1) are split level by level, every node
// of a level at once: one kernel finds each node's box, one picks the dimension of largest spread,
// one CUB radix sort orders the rows of every node by (node, coordinate), and a gather moves the
// rows; the split value of a node is the first coordinate of its upper half. Nothing goes back to
// the host between levels. The tree is arrays in heap order (node v: children 2v + 1, 2v + 2; leaf
// j is node L - 1 + j and holds rows [j S, (j + 1) S)). CUDA builds only.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/cuda/buffers.hpp"
#include "kernels/common/kd_leaves.hpp"

namespace knn::kd {

struct DeviceKdTree {
  LeafPlan plan;
  int dim = 0;
  cuda::StreamBuffer<float> points;        // padded x dim, row-major, leaf after leaf
  cuda::StreamBuffer<std::int32_t> index;  // padded: the reference row, -1 for padding
  cuda::StreamBuffer<float> lo, hi;        // nodes x dim: each node's box over its real rows (empty: +inf, -inf)
  cuda::StreamBuffer<std::int32_t> split_dim;  // internal nodes (at least one slot)
  cuda::StreamBuffer<float> split;             // rows of the lower half <= split <= rows of the upper half
  // leaves x dim: each leaf's cell, the region its ancestors' planes cut out (a query goes right at a
  // node where coordinate >= split): lo = the largest split it lies right of, hi = the smallest it lies
  // left of, -inf / +inf where there is none; lo = +inf, hi = -inf (no query inside) where a split is NaN.
  cuda::StreamBuffer<float> cell_lo, cell_hi;
};

// Enqueues the build of the tree of n device rows (row-major n x dim) on `stream`.
DeviceKdTree build_device(const float* points, const LeafPlan& plan, int dim, cudaStream_t stream);

// Device bytes build_device allocates, at most (tree plus scratch).
std::size_t device_bytes(const LeafPlan& plan, int dim);

}  // namespace knn::kd
