// The GPU kd-tree build from presorted lists (kdtree_gpu_build.hpp: build_device_lists).
//
// List d holds the padded rows' ids (0..padded-1; ids from n on are padding) sorted by coordinate d,
// padding last. One CUB radix sort of (d, padding, coordinate) keys makes all the lists at once. Node
// v of level l holds list positions [v seg, (v + 1) seg) of every list (seg = padded >> l), and each
// list keeps the node's rows in its own order:
// - the node's box in dimension d is the coordinates of the first and the last real entry of list d
//   (the node's padding sits at its end: padding ids hold list positions [n, padded) in every list
//   at every level, by induction over the partitions below);
// - its split dimension is the one of largest spread, and its split value the coordinate of the
//   first entry of the upper half of that list;
// - a row goes to the lower child when it sits in the lower half of its node's split-dimension list
//   (one flag bit per row id), and every list is partitioned stably by those flags: an entry's place in
//   its child is the count of lower flags before it in its node, read from one scan over all lists,
//   less the lower rows of the lists and nodes before (every node sends exactly half its rows lower).
//   So the children's lists stay sorted.
// Per level: the nodes' kernel (a warp per node), the flags' kernel and CUB's single-pass scan, whose
// output iterator places each entry (the scan carries each entry's id and flag, so each is read once).
// At the end the leaves' boxes, and the rows gathered in list 0's order. The box and the split follow
// the sort build's rules (largest spread, the first dimension on a tie; empty boxes +inf, -inf); rows
// equal at a median may fall on either side, as in any valid tree.
#include "kernels/trees/gpu_kdtree/kdtree_gpu_build.hpp"

#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

#include "core/cuda/error.hpp"
#include "core/cuda/stream.hpp"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_build_common.cuh"

namespace knn::kd {

namespace {

using detail::grid_for;
using detail::kThreads;
using detail::ordered;

// Keys (d << 33) | (padding << 32) | ordered(coordinate), values the row ids, dimension after dimension.
__global__ void presort_keys_kernel(const float* __restrict__ src, std::int64_t n, std::int64_t padded, int dim,
                                    std::uint64_t* __restrict__ keys, std::int32_t* __restrict__ ids) {
  const std::int64_t total = padded * dim;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t d = e / padded, r = e - d * padded;
    keys[e] = (std::uint64_t(d) << 33) | (r < n ? std::uint64_t(ordered(src[r * dim + d])) : (std::uint64_t(1) << 32));
    ids[e] = std::int32_t(r);
  }
}

// One warp per node of a level (first: its first node in heap order), a lane per dimension: the box
// from its lists' ends, and for an internal node the split dimension (the largest spread, the lowest
// dimension on a tie, 0 where no spread exceeds -inf: an empty node) and value. Writes lo, hi, the
// packed box and, where internal, split_dim and split.
__global__ void nodes_kernel(const float* __restrict__ src, std::int64_t n, std::int64_t padded, int dim, int pad,
                             std::int64_t seg, std::int64_t first, std::int64_t count, bool internal,
                             const std::int32_t* __restrict__ lists, float* __restrict__ lo, float* __restrict__ hi,
                             float* __restrict__ box, std::int32_t* __restrict__ split_dim, float* __restrict__ split) {
  const int lane = int(threadIdx.x & 31);
  const std::int64_t warps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t v = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) >> 5; v < count; v += warps) {
    const std::int64_t begin = v * seg, node = first + v;
    const std::int64_t real = std::max<std::int64_t>(0, std::min(seg, n - begin));
    int best = dim;  // none yet
    float spread = -INFINITY;
    for (int d = lane; d < pad; d += 32) {
      float l = 0.f, h = 0.f;  // the packed box's padding floats
      if (d < dim) {
        l = INFINITY, h = -INFINITY;
        if (real > 0) {
          l = src[std::int64_t(lists[d * padded + begin]) * dim + d];
          h = src[std::int64_t(lists[d * padded + begin + real - 1]) * dim + d];
        }
        lo[node * dim + d] = l;
        hi[node * dim + d] = h;
        if (h - l > spread) spread = h - l, best = d;
      }
      box[node * 2 * pad + d] = l;
      box[node * 2 * pad + pad + d] = h;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, spread, offset);
      const int other_best = __shfl_xor_sync(0xffffffffu, best, offset);
      if (other > spread || (other == spread && other_best < best)) spread = other, best = other_best;
    }
    if (best == dim) best = 0;
    if (internal && lane == 0) {
      const std::int32_t id = lists[best * padded + begin + seg / 2];
      split_dim[node] = best;
      split[node] = id < n ? src[std::int64_t(id) * dim + best] : INFINITY;
    }
  }
}

// Each row's flag, one bit per row id: 1 when the row sits in the lower half of its node's
// split-dimension list. Every bit is written by one thread (set or cleared), so the words need no
// clearing between levels. As bits the flags of 2^20 rows take 128 KiB, which the scan's lookups in
// random id order mostly find in L1.
__global__ void flags_kernel(const std::int32_t* __restrict__ lists, std::int64_t padded, std::int64_t seg, std::int64_t first,
                             const std::int32_t* __restrict__ split_dim, unsigned* __restrict__ flags) {
  for (std::int64_t p = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; p < padded; p += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t v = p / seg;
    const std::int32_t id = lists[std::int64_t(split_dim[first + v]) * padded + p];
    const unsigned bit = 1u << (id & 31);
    if ((p - v * seg) < seg / 2)
      atomicOr(flags + (id >> 5), bit);
    else
      atomicAnd(flags + (id >> 5), ~bit);
  }
}

// The scan runs over entries packed as (lower flags << 32) | (flag << 31) | id: the sum of the flags
// above, the entry's own flag and id below, kept from the right operand. So the inclusive scan hands
// each entry its id, its flag and the lower flags up to it, and neither is read twice.
struct Packed {
  const std::int32_t* lists;
  const unsigned* flags;
  __device__ std::uint64_t operator()(int i) const {
    const std::uint32_t id = std::uint32_t(lists[i]), flag = (__ldg(flags + (id >> 5)) >> (id & 31)) & 1u;
    return (std::uint64_t(flag) << 32) | (flag << 31) | id;
  }
};
struct SumKeepRight {
  __device__ std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const {
    return (((a >> 32) + (b >> 32)) << 32) | (b & 0xffffffffu);
  }
};

// The scan's output: entry i goes to its place in its child, after the lower entries ahead of it in
// its node (the lower flags up to it, less its own and those of the lists and nodes before).
struct Place {
  std::int32_t* out;
  int padded, seg;
  __device__ void operator()(int i, std::uint64_t packed) const {
    const int d = i / padded, p = i - d * padded, v = p / seg, half = seg / 2;
    const int flag = int(packed >> 31) & 1;
    const int lower = int(packed >> 32) - flag - d * (padded / 2) - v * half;
    out[d * padded + v * seg + (flag ? lower : half + (p - v * seg) - lower)] = std::int32_t(packed & 0x7fffffffu);
  }
};

// The rows and their reference indices in list 0's order (padding: +inf, -1).
__global__ void rows_kernel(const float* __restrict__ src, std::int64_t n, std::int64_t padded, int dim,
                            const std::int32_t* __restrict__ list, float* __restrict__ points, std::int32_t* __restrict__ index) {
  const std::int64_t total = padded * dim;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = e / dim, d = e - r * dim;
    const std::int32_t id = list[r];
    points[e] = id < n ? src[std::int64_t(id) * dim + d] : INFINITY;
    if (d == 0) index[r] = id < n ? id : -1;
  }
}

int bits_for(int values) {  // bits that hold 0..values-1
  int b = 0;
  while ((1 << b) < values) ++b;
  return b;
}

}  // namespace

DeviceKdTree build_device_lists(const float* points, const LeafPlan& plan, int dim, cudaStream_t stream) {
  const std::int64_t padded = plan.padded(), entries = padded * dim;
  if (!lists_fit(dim, padded))
    throw std::invalid_argument(fmt::format("kd-tree build from lists: {} dimensions x {} padded rows reach 2^31 list entries", dim, padded));
  DeviceKdTree t = detail::allocate_tree(plan, dim, stream);
  cuda::StreamBuffer<std::int32_t> lists[2] = {{std::size_t(entries), stream}, {std::size_t(entries), stream}};
  cuda::StreamBuffer<unsigned> flags(std::size_t(padded + 31) / 32, stream);
  int cur = 0;
  {
    cuda::StreamBuffer<std::uint64_t> keys[2] = {{std::size_t(entries), stream}, {std::size_t(entries), stream}};
    presort_keys_kernel<<<grid_for(entries), kThreads, 0, stream>>>(points, plan.n, padded, dim, keys[0].data(), lists[0].data());
    KNN_CUDA_CHECK_LAUNCH();
    cub::DoubleBuffer<std::uint64_t> k(keys[0].data(), keys[1].data());
    cub::DoubleBuffer<std::int32_t> v(lists[0].data(), lists[1].data());
    std::size_t bytes = 0;
    const int end_bit = 33 + bits_for(dim);
    KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, v, int(entries), 0, end_bit, stream));
    cuda::StreamBuffer<unsigned char> temp(std::max<std::size_t>(bytes, 1), stream);
    KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, k, v, int(entries), 0, end_bit, stream));
    cur = v.Current() == lists[0].data() ? 0 : 1;
  }
  const auto packed = thrust::make_transform_iterator(thrust::counting_iterator<int>(0), Packed{nullptr, flags.data()});
  std::size_t scan_bytes = 0;
  KNN_CUDA_TRY(cub::DeviceScan::InclusiveScan(nullptr, scan_bytes, packed, thrust::make_tabulate_output_iterator(Place{}), SumKeepRight{},
                                              int(entries), stream));
  cuda::StreamBuffer<unsigned char> scan_temp(std::max<std::size_t>(scan_bytes, 1), stream);
  const int pad = box_pad(dim);
  for (int level = 0; level <= plan.levels; ++level) {
    const std::int64_t count = std::int64_t(1) << level, seg = padded >> level, first = count - 1;
    const bool internal = level < plan.levels;
    nodes_kernel<<<grid_for(count * 32), kThreads, 0, stream>>>(points, plan.n, padded, dim, pad, seg, first, count, internal, lists[cur].data(),
                                                          t.lo.data(), t.hi.data(), t.box.data(), t.split_dim.data(), t.split.data());
    KNN_CUDA_CHECK_LAUNCH();
    if (!internal) break;
    flags_kernel<<<grid_for(padded), kThreads, 0, stream>>>(lists[cur].data(), padded, seg, first, t.split_dim.data(), flags.data());
    KNN_CUDA_CHECK_LAUNCH();
    const auto in = thrust::make_transform_iterator(thrust::counting_iterator<int>(0), Packed{lists[cur].data(), flags.data()});
    const auto out = thrust::make_tabulate_output_iterator(Place{lists[1 - cur].data(), int(padded), int(seg)});
    std::size_t bytes = scan_bytes;
    KNN_CUDA_TRY(cub::DeviceScan::InclusiveScan(scan_temp.data(), bytes, in, out, SumKeepRight{}, int(entries), stream));
    cur = 1 - cur;
  }
  rows_kernel<<<grid_for(entries), kThreads, 0, stream>>>(points, plan.n, padded, dim, lists[cur].data(), t.points.data(), t.index.data());
  KNN_CUDA_CHECK_LAUNCH();
  return t;
}

HostKdTree build_on_device(const float* host_points, const LeafPlan& plan, int dim, bool lists, std::int64_t segment_rows) {
  cuda::Stream stream;  // first: the buffers below are freed on it before it goes back
  HostKdTree h;
  h.plan = plan;
  cuda::StreamBuffer<float> src(std::size_t(plan.n) * dim, stream);
  KNN_CUDA_TRY(cudaMemcpyAsync(src.data(), host_points, std::size_t(plan.n) * dim * sizeof(float), cudaMemcpyHostToDevice, stream));
  const DeviceKdTree t = lists ? build_device_lists(src.data(), plan, dim, stream) : build_device(src.data(), plan, dim, segment_rows, stream);
  const auto down = [&](auto& to, const auto& from, std::size_t count) {
    to.resize(count);
    KNN_CUDA_TRY(cudaMemcpyAsync(to.data(), from.data(), count * sizeof(to[0]), cudaMemcpyDeviceToHost, stream));
  };
  const std::size_t padded = std::size_t(plan.padded()), nodes = std::size_t(plan.nodes()), internal = std::size_t(plan.leaves - 1);
  down(h.points, t.points, padded * dim);
  down(h.index, t.index, padded);
  down(h.lo, t.lo, nodes * dim);
  down(h.hi, t.hi, nodes * dim);
  down(h.split_dim, t.split_dim, internal);
  down(h.split, t.split, internal);
  down(h.box, t.box, nodes * 2 * box_pad(dim));
  stream.synchronize();
  return h;
}

}  // namespace knn::kd
