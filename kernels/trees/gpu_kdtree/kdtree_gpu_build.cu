// The GPU kd-tree build (kdtree_gpu_build.hpp): per level, node boxes by block reductions and
// ordered-integer atomics; the keys, each row's thread finding its node's split dimension; one CUB
// radix sort of (node, coordinate) keys over all rows (or, where the nodes are small, one segmented
// sort of the coordinates with a segment per node); and a gather of the rows that also writes the
// split values. Three launches and the sort's per level; all on one stream, no host synchronisation.
#include "kernels/trees/gpu_kdtree/kdtree_gpu_build.hpp"

#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>

#include "core/cuda/error.hpp"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_build_common.cuh"

namespace knn::kd {

namespace {

using detail::grid_for;
using detail::kThreads;
using detail::ordered;
using detail::unordered;

// The padded rows (padding at +inf, index -1) and every node's box emptied (lo = ordered(+inf),
// hi = ordered(-inf)), in one launch.
__global__ void init_kernel(const float* __restrict__ src, std::int64_t n, std::int64_t padded, int dim,
                            float* __restrict__ points, std::int32_t* __restrict__ index,
                            unsigned* __restrict__ lo, unsigned* __restrict__ hi, std::int64_t box_values) {
  const std::int64_t total = padded * dim > box_values ? padded * dim : box_values;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    if (e < padded * dim) {
      const std::int64_t row = e / dim;
      points[e] = row < n ? src[e] : INFINITY;
      if (e % dim == 0) index[row] = row < n ? std::int32_t(row) : -1;
    }
    if (e < box_values) {
      lo[e] = 0xff800000u | 0x80000000u;  // ordered(+inf)
      hi[e] = ~0xff800000u;               // ordered(-inf)
    }
  }
}

struct MinOp {
  __device__ __forceinline__ unsigned operator()(unsigned a, unsigned b) const { return min(a, b); }
};
struct MaxOp {
  __device__ __forceinline__ unsigned operator()(unsigned a, unsigned b) const { return max(a, b); }
};

// Block b reduces chunk b % chunks of node first + b / chunks (real rows only) into the node's box.
__global__ void __launch_bounds__(kThreads) boxes_kernel(const float* __restrict__ points,
                                                         const std::int32_t* __restrict__ index, int dim,
                                                         std::int64_t seg, int chunks, std::int64_t first_node,
                                                         unsigned* lo, unsigned* hi) {
  using Reduce = cub::BlockReduce<unsigned, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  const std::int64_t node = blockIdx.x / chunks, chunk = blockIdx.x % chunks;
  const std::int64_t begin = node * seg + chunk * seg / chunks, end = node * seg + (chunk + 1) * seg / chunks;
  for (int k = 0; k < dim; ++k) {
    unsigned l = 0xffffffffu, h = 0u;
    for (std::int64_t r = begin + threadIdx.x; r < end; r += kThreads) {
      if (__ldg(index + r) < 0) continue;
      const unsigned v = ordered(__ldg(points + r * dim + k));
      l = min(l, v);
      h = max(h, v);
    }
    l = Reduce(temp).Reduce(l, MinOp());
    __syncthreads();
    h = Reduce(temp).Reduce(h, MaxOp());
    __syncthreads();
    if (threadIdx.x == 0) {
      const std::int64_t at = (first_node + node) * dim + k;
      if (l != 0xffffffffu) atomicMin(lo + at, l);
      if (h != 0u) atomicMax(hi + at, h);
    }
  }
}

// The dimension of largest spread of a node (the first on a tie; dimension 0 for an empty node),
// from its box in ordered integers. Every row's thread of the keys kernels finds its node's; the
// node's first row writes it for the gather and the search.
__device__ __forceinline__ int split_dim_of(const unsigned* __restrict__ lo, const unsigned* __restrict__ hi, int dim,
                                            std::int64_t node) {
  int best = 0;
  float spread = -INFINITY;
  for (int k = 0; k < dim; ++k) {
    const float s = unordered(__ldg(hi + node * dim + k)) - unordered(__ldg(lo + node * dim + k));
    if (s > spread) spread = s, best = k;
  }
  return best;
}

__global__ void keys_kernel(const float* __restrict__ points, int dim, std::int64_t padded, std::int64_t seg,
                            std::int64_t first_node, const unsigned* __restrict__ lo, const unsigned* __restrict__ hi,
                            std::int32_t* __restrict__ split_dim, std::uint64_t* __restrict__ keys,
                            std::int32_t* __restrict__ order) {
  for (std::int64_t r = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; r < padded;
       r += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t j = r / seg;
    const int k = split_dim_of(lo, hi, dim, first_node + j);
    if (r % seg == 0) split_dim[first_node + j] = k;
    keys[r] = (std::uint64_t(j) << 32) | ordered(points[r * dim + k]);
    order[r] = std::int32_t(r);
  }
}

// The same for a segmented sort: the coordinate alone as the key, and the nodes' row offsets.
__global__ void node_keys_kernel(const float* __restrict__ points, int dim, std::int64_t padded, std::int64_t seg,
                                 std::int64_t first_node, const unsigned* __restrict__ lo, const unsigned* __restrict__ hi,
                                 std::int32_t* __restrict__ split_dim, unsigned* __restrict__ keys,
                                 std::int32_t* __restrict__ order, std::int32_t* __restrict__ offsets) {
  for (std::int64_t r = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; r < padded;
       r += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t j = r / seg;
    const int k = split_dim_of(lo, hi, dim, first_node + j);
    if (r % seg == 0) split_dim[first_node + j] = k;
    keys[r] = ordered(points[r * dim + k]);
    order[r] = std::int32_t(r);
    if (r % seg == 0) offsets[j] = std::int32_t(r);
    if (r == 0) offsets[padded / seg] = std::int32_t(padded);
  }
}

// The rows in their sorted order, and each node's split value: the coordinate along its split
// dimension of the first row of its upper half.
__global__ void gather_kernel(const float* __restrict__ points, const std::int32_t* __restrict__ index,
                              const std::int32_t* __restrict__ order, std::int64_t padded, int dim, std::int64_t seg,
                              std::int64_t first_node, const std::int32_t* __restrict__ split_dim,
                              float* __restrict__ out_points, std::int32_t* __restrict__ out_index,
                              float* __restrict__ split) {
  const std::int64_t total = padded * dim;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = e / dim, k = e % dim;
    const std::int64_t from = order[r];
    const float v = points[from * dim + k];
    out_points[e] = v;
    if (k == 0) out_index[r] = index[from];
    if (r % seg == seg / 2 && k == split_dim[first_node + r / seg]) split[first_node + r / seg] = v;
  }
}

// The boxes decoded in place (ordered integers back to floats) and packed for the search
// (kdtree_gpu_build.hpp); padding floats are 0. One thread per (node, packed slot).
__global__ void finish_boxes_kernel(unsigned* __restrict__ lo, unsigned* __restrict__ hi, std::int64_t nodes, int dim, int pad,
                                    float* __restrict__ box) {
  const std::int64_t total = nodes * pad;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t node = e / pad;
    const int k = int(e % pad);
    float l = 0.f, h = 0.f;
    if (k < dim) {
      l = unordered(lo[node * dim + k]);
      h = unordered(hi[node * dim + k]);
      lo[node * dim + k] = __float_as_uint(l);
      hi[node * dim + k] = __float_as_uint(h);
    }
    box[node * 2 * pad + k] = l;
    box[node * 2 * pad + pad + k] = h;
  }
}

std::size_t sort_temp_bytes(const LeafPlan& plan, std::int64_t segment_rows, cudaStream_t stream) {
  const std::int64_t padded = plan.padded();
  std::size_t most = 1;
  for (int level = 0; level < plan.levels; ++level) {
    std::size_t bytes = 0;
    if (segmented_level(padded, level, segment_rows)) {
      KNN_CUDA_TRY(cub::DeviceSegmentedSort::SortPairs(nullptr, bytes, static_cast<const unsigned*>(nullptr), static_cast<unsigned*>(nullptr),
                                                       static_cast<const std::int32_t*>(nullptr), static_cast<std::int32_t*>(nullptr),
                                                       padded, std::int64_t(1) << level, static_cast<const std::int32_t*>(nullptr),
                                                       static_cast<const std::int32_t*>(nullptr) + 1, stream));
    } else {
      cub::DoubleBuffer<std::uint64_t> k(nullptr, nullptr);
      cub::DoubleBuffer<std::int32_t> v(nullptr, nullptr);
      KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, v, int(padded), 0, 64, stream));
    }
    most = std::max(most, bytes);
  }
  return most;
}

void boxes(const DeviceKdTree& t, const float* points, const std::int32_t* index, int level, cudaStream_t stream) {
  const std::int64_t nodes = std::int64_t(1) << level, seg = t.plan.padded() >> level;
  const int chunks = int(std::max<std::int64_t>(1, (seg + 1023) / 1024));
  auto* lo = reinterpret_cast<unsigned*>(t.lo.data());
  auto* hi = reinterpret_cast<unsigned*>(t.hi.data());
  boxes_kernel<<<unsigned(nodes * chunks), kThreads, 0, stream>>>(points, index, t.dim, seg, chunks, nodes - 1, lo, hi);
  KNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

std::size_t device_bytes(const LeafPlan& plan, int dim) {
  const std::size_t padded = std::size_t(plan.padded()), nodes = std::size_t(plan.nodes());
  const std::size_t tree = padded * (dim * sizeof(float) + sizeof(std::int32_t)) +
                           nodes * 2 * (dim + box_pad(dim)) * sizeof(float) +
                           std::size_t(plan.leaves) * (sizeof(std::int32_t) + sizeof(float));
  const std::size_t sorts = padded * (dim * sizeof(float) + sizeof(std::int32_t)) +
                            padded * 2 * (sizeof(std::uint64_t) + sizeof(std::int32_t)) + padded * 8 + (1u << 20) +
                            std::size_t(plan.leaves) * sizeof(std::int32_t);
  // The lists build: keys and lists, two of each, the flags, and the sort's and the scan's scratch.
  const std::size_t lists = padded * dim * 2 * (sizeof(std::uint64_t) + sizeof(std::int32_t)) + padded / 8 + padded * dim * 2 + (1u << 20);
  return tree + std::max(sorts, lists);
}

DeviceKdTree build_device(const float* points, const LeafPlan& plan, int dim, std::int64_t segment_rows, cudaStream_t stream) {
  DeviceKdTree t = detail::allocate_tree(plan, dim, stream);
  const std::int64_t padded = plan.padded(), nodes = plan.nodes();
  cuda::StreamBuffer<float> other_points(std::size_t(padded) * dim, stream);
  cuda::StreamBuffer<std::int32_t> other_index(std::size_t(padded), stream);
  cuda::StreamBuffer<std::uint64_t> keys[2] = {{std::size_t(padded), stream}, {std::size_t(padded), stream}};
  cuda::StreamBuffer<std::int32_t> order[2] = {{std::size_t(padded), stream}, {std::size_t(padded), stream}};
  cuda::StreamBuffer<std::int32_t> offsets(std::size_t(plan.leaves) + 1, stream);  // a segmented level's node offsets
  const std::size_t temp_bytes = sort_temp_bytes(plan, segment_rows, stream);
  cuda::StreamBuffer<unsigned char> temp(temp_bytes, stream);

  auto* lo = reinterpret_cast<unsigned*>(t.lo.data());
  auto* hi = reinterpret_cast<unsigned*>(t.hi.data());
  init_kernel<<<grid_for(std::max(padded * dim, nodes * dim)), kThreads, 0, stream>>>(points, plan.n, padded, dim, t.points.data(),
                                                                                     t.index.data(), lo, hi, nodes * dim);
  KNN_CUDA_CHECK_LAUNCH();
  float* cur_points = t.points.data();
  std::int32_t* cur_index = t.index.data();
  float* next_points = other_points.data();
  std::int32_t* next_index = other_index.data();
  for (int level = 0; level < plan.levels; ++level) {
    const std::int64_t level_nodes = std::int64_t(1) << level, seg = padded >> level, first = level_nodes - 1;
    boxes(t, cur_points, cur_index, level, stream);
    std::size_t bytes = temp_bytes;
    const std::int32_t* sorted = nullptr;  // the rows' order after the sort
    if (segmented_level(padded, level, segment_rows)) {
      auto* in = reinterpret_cast<unsigned*>(keys[0].data());
      auto* out = reinterpret_cast<unsigned*>(keys[1].data());
      node_keys_kernel<<<grid_for(padded), kThreads, 0, stream>>>(cur_points, dim, padded, seg, first, lo, hi, t.split_dim.data(),
                                                                  in, order[0].data(), offsets.data());
      KNN_CUDA_CHECK_LAUNCH();
      KNN_CUDA_TRY(cub::DeviceSegmentedSort::SortPairs(temp.data(), bytes, in, out, order[0].data(), order[1].data(), padded,
                                                       level_nodes, offsets.data(), offsets.data() + 1, stream));
      sorted = order[1].data();
    } else {
      cub::DoubleBuffer<std::uint64_t> k(keys[0].data(), keys[1].data());
      cub::DoubleBuffer<std::int32_t> v(order[0].data(), order[1].data());
      keys_kernel<<<grid_for(padded), kThreads, 0, stream>>>(cur_points, dim, padded, seg, first, lo, hi, t.split_dim.data(),
                                                             k.Current(), v.Current());
      KNN_CUDA_CHECK_LAUNCH();
      KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, k, v, int(padded), 0, 32 + level, stream));
      sorted = v.Current();
    }
    gather_kernel<<<grid_for(padded * dim), kThreads, 0, stream>>>(cur_points, cur_index, sorted, padded, dim, seg, first,
                                                                   t.split_dim.data(), next_points, next_index, t.split.data());
    KNN_CUDA_CHECK_LAUNCH();
    std::swap(cur_points, next_points);
    std::swap(cur_index, next_index);
  }
  boxes(t, cur_points, cur_index, plan.levels, stream);
  finish_boxes_kernel<<<grid_for(nodes * box_pad(dim)), kThreads, 0, stream>>>(lo, hi, nodes, dim, box_pad(dim), t.box.data());
  KNN_CUDA_CHECK_LAUNCH();
  if (cur_points != t.points.data()) {  // an odd number of levels: the rows sit in the other pair
    std::swap(t.points, other_points);
    std::swap(t.index, other_index);
  }
  return t;
}

}  // namespace knn::kd
