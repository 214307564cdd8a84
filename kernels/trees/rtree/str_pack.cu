// The GPU STR builder (str_pack_gpu.hpp). Each pass of a level is a key kernel plus one stable CUB
// radix sort of (segment, coordinate bits) keys carrying the permutation; a level then gathers its
// items into packed order and writes one box per group. Counts come from the host plan (str_pack.cpp),
// so the whole build is enqueued on one stream with no synchronisation.
#include "kernels/trees/rtree/str_pack_gpu.hpp"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/cuda/runtime.hpp"

namespace knn::str {

namespace {

constexpr int kThreads = 256;

int grid_for(std::int64_t items) {
  return int(std::max<std::int64_t>(1, std::min<std::int64_t>((items + kThreads - 1) / kThreads, 1 << 16)));
}

#define KNN_STR_GRID_STRIDE(i, count) \
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (count); i += std::int64_t(gridDim.x) * blockDim.x)

// One thread per position: the identity permutation.
__global__ void iota_kernel(std::int32_t* __restrict__ order, std::int64_t count) {
  KNN_STR_GRID_STRIDE(i, count) order[i] = std::int32_t(i);
}

// One thread per position i: the sort key of pass d, (segment of i, bits of the item's coordinate d).
__global__ void pass_keys_kernel(const float* __restrict__ keys, int dim, int d, const std::int32_t* __restrict__ order,
                                 std::int64_t count, std::int64_t segment, std::uint64_t* __restrict__ out) {
  KNN_STR_GRID_STRIDE(i, count) {
    const float c = keys[std::size_t(order[i]) * dim + d];
    out[i] = std::uint64_t(i / segment) << 32 | orderable_bits(c);
  }
}

// One thread per float of the output: row i of `dst` is row order[i] of `src`.
__global__ void gather_rows_kernel(const float* __restrict__ src, const std::int32_t* __restrict__ order,
                                   std::int64_t count, int dim, float* __restrict__ dst) {
  KNN_STR_GRID_STRIDE(e, count * dim) dst[e] = src[std::size_t(order[e / dim]) * dim + e % dim];
}

// One thread per leaf: its point range and the box of those packed rows.
__global__ void leaf_boxes_kernel(const float* __restrict__ rows, std::int64_t n, int dim, int fanout,
                                  std::int64_t leaves, float* __restrict__ lo, float* __restrict__ hi,
                                  std::int32_t* __restrict__ begin, std::int32_t* __restrict__ end) {
  KNN_STR_GRID_STRIDE(leaf, leaves) {
    const std::int64_t first = leaf * fanout, last = min(n, first + fanout);
    begin[leaf] = std::int32_t(first);
    end[leaf] = std::int32_t(last);
    for (int k = 0; k < dim; ++k) {
      float l = rows[std::size_t(first) * dim + k], h = l;
      for (std::int64_t r = first + 1; r < last; ++r) {
        const float v = rows[std::size_t(r) * dim + k];
        l = coord_min(l, v);
        h = coord_max(h, v);
      }
      lo[std::size_t(leaf) * dim + k] = l;
      hi[std::size_t(leaf) * dim + k] = h;
    }
  }
}

// One thread per float: the upper levels' sort keys, lo + hi of a box.
__global__ void box_sum_kernel(const float* __restrict__ lo, const float* __restrict__ hi, std::int64_t floats,
                               float* __restrict__ out) {
  KNN_STR_GRID_STRIDE(e, floats) out[e] = __fadd_rn(lo[e], hi[e]);
}

// One thread per node: node i of the destination is node order[i] of the source.
__global__ void permute_nodes_kernel(const float* __restrict__ lo, const float* __restrict__ hi,
                                     const std::int32_t* __restrict__ begin, const std::int32_t* __restrict__ end,
                                     const std::int32_t* __restrict__ order, std::int64_t count, int dim,
                                     float* __restrict__ out_lo, float* __restrict__ out_hi,
                                     std::int32_t* __restrict__ out_begin, std::int32_t* __restrict__ out_end) {
  KNN_STR_GRID_STRIDE(i, count) {
    const std::int64_t from = order[i];
    for (int k = 0; k < dim; ++k) {
      out_lo[i * dim + k] = lo[from * dim + k];
      out_hi[i * dim + k] = hi[from * dim + k];
    }
    out_begin[i] = begin[from];
    out_end[i] = end[from];
  }
}

// One thread per parent g: children first + [g·fanout, min(count, (g + 1)·fanout)), their box union.
// `lo`/`hi` hold both levels (children read, parents written: disjoint ranges).
__global__ void parent_boxes_kernel(float* lo, float* hi, std::int64_t first, std::int64_t count,
                                    std::int64_t parent_first, std::int64_t parents, int fanout, int dim,
                                    std::int32_t* __restrict__ begin, std::int32_t* __restrict__ end) {
  KNN_STR_GRID_STRIDE(g, parents) {
    const std::int64_t c0 = first + g * fanout, c1 = first + min(count, (g + 1) * fanout);
    const std::int64_t node = parent_first + g;
    begin[node] = std::int32_t(c0);
    end[node] = std::int32_t(c1);
    for (int k = 0; k < dim; ++k) {
      float l = lo[c0 * dim + k], h = hi[c0 * dim + k];
      for (std::int64_t c = c0 + 1; c < c1; ++c) {
        l = coord_min(l, lo[c * dim + k]);
        h = coord_max(h, hi[c * dim + k]);
      }
      lo[node * dim + k] = l;
      hi[node * dim + k] = h;
    }
  }
}

// Work arrays of one build, sized for its largest level (the points).
struct Scratch {
  cuda::StreamBuffer<std::uint64_t> keys[2];
  cuda::StreamBuffer<std::int32_t> order[2];
  cuda::StreamBuffer<unsigned char> temp;
  std::size_t temp_bytes = 0;
  cuda::StreamBuffer<float> sums, lo, hi;  // one level of nodes
  cuda::StreamBuffer<std::int32_t> begin, end;

  Scratch(std::int64_t n, std::int64_t leaves, int dim, cudaStream_t stream)
      : keys{{std::size_t(n), stream}, {std::size_t(n), stream}},
        order{{std::size_t(n), stream}, {std::size_t(n), stream}},
        sums(std::size_t(leaves) * dim, stream),
        lo(std::size_t(leaves) * dim, stream),
        hi(std::size_t(leaves) * dim, stream),
        begin(std::size_t(leaves), stream),
        end(std::size_t(leaves), stream) {
    cub::DoubleBuffer<std::uint64_t> k(keys[0].data(), keys[1].data());
    cub::DoubleBuffer<std::int32_t> v(order[0].data(), order[1].data());
    KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, k, v, int(n), 0, 64, stream));
    temp = cuda::StreamBuffer<unsigned char>(std::max<std::size_t>(temp_bytes, 1), stream);
  }
};

std::size_t sort_temp_bytes(std::int64_t n) {
  // An estimate for device_bytes(): CUB's one-sweep radix sort needs well under a key per item.
  return std::size_t(n) * sizeof(std::uint64_t) + (std::size_t(1) << 20);
}

// Enqueues the STR permutation of `count` items (row-major `keys`); returns the device array that
// holds it (one of scratch.order).
const std::int32_t* str_order_device(const float* keys, std::int64_t count, int dim, int fanout, Scratch& s,
                                     cudaStream_t stream) {
  const LevelPlan plan = plan_level(count, dim, fanout);
  cub::DoubleBuffer<std::uint64_t> k(s.keys[0].data(), s.keys[1].data());
  cub::DoubleBuffer<std::int32_t> v(s.order[0].data(), s.order[1].data());
  iota_kernel<<<grid_for(count), kThreads, 0, stream>>>(v.Current(), count);
  KNN_CUDA_CHECK_LAUNCH();
  for (int d = 0; d < plan.sort_dims; ++d) {
    pass_keys_kernel<<<grid_for(count), kThreads, 0, stream>>>(keys, dim, d, v.Current(), count, plan.segment[d],
                                                               k.Current());
    KNN_CUDA_CHECK_LAUNCH();
    const std::int64_t segments = (count + plan.segment[d] - 1) / plan.segment[d];
    int segment_bits = 0;
    while ((std::int64_t(1) << segment_bits) < segments) ++segment_bits;
    std::size_t bytes = s.temp_bytes;
    KNN_CUDA_TRY(cub::DeviceRadixSort::SortPairs(s.temp.data(), bytes, k, v, int(count), 0, 32 + segment_bits, stream));
  }
  return v.Current();
}

}  // namespace

std::size_t device_bytes(std::int64_t n, int dim, int fanout) {
  const Shape s = plan_tree(n, dim, fanout);
  const std::size_t tree = std::size_t(n) * (dim * sizeof(float) + sizeof(std::int32_t)) +
                           std::size_t(s.nodes()) * (2 * dim * sizeof(float) + 2 * sizeof(std::int32_t));
  const std::size_t scratch = std::size_t(n) * 2 * (sizeof(std::uint64_t) + sizeof(std::int32_t)) +
                              sort_temp_bytes(n) +
                              std::size_t(s.leaves()) * (3 * dim * sizeof(float) + 2 * sizeof(std::int32_t));
  return tree + scratch;
}

DeviceTree build_device(const float* points, std::int64_t n, int dim, int fanout, cudaStream_t stream) {
  DeviceTree t;
  t.shape = plan_tree(n, dim, fanout);
  const Shape& shape = t.shape;
  const std::size_t nodes = std::size_t(shape.nodes());
  t.points = cuda::StreamBuffer<float>(std::size_t(n) * dim, stream);
  t.index = cuda::StreamBuffer<std::int32_t>(std::size_t(n), stream);
  t.lo = cuda::StreamBuffer<float>(nodes * dim, stream);
  t.hi = cuda::StreamBuffer<float>(nodes * dim, stream);
  t.begin = cuda::StreamBuffer<std::int32_t>(nodes, stream);
  t.end = cuda::StreamBuffer<std::int32_t>(nodes, stream);
  Scratch s(n, shape.leaves(), dim, stream);

  const std::int32_t* order = str_order_device(points, n, dim, fanout, s, stream);
  gather_rows_kernel<<<grid_for(n * dim), kThreads, 0, stream>>>(points, order, n, dim, t.points.data());
  KNN_CUDA_CHECK_LAUNCH();
  KNN_CUDA_TRY(cudaMemcpyAsync(t.index.data(), order, std::size_t(n) * sizeof(std::int32_t), cudaMemcpyDeviceToDevice,
                               stream));
  leaf_boxes_kernel<<<grid_for(shape.leaves()), kThreads, 0, stream>>>(
      t.points.data(), n, dim, fanout, shape.leaves(), t.lo.data(), t.hi.data(), t.begin.data(), t.end.data());
  KNN_CUDA_CHECK_LAUNCH();

  for (int level = 1; level < shape.levels(); ++level) {
    const std::int64_t first = shape.level_begin[level - 1];
    const std::int64_t count = shape.level_begin[level] - first;
    const std::int64_t parents = shape.level_begin[level + 1] - shape.level_begin[level];
    float* lo = t.lo.data() + std::size_t(first) * dim;
    float* hi = t.hi.data() + std::size_t(first) * dim;
    if (plan_level(count, dim, fanout).sort_dims > 0) {  // else the order is the identity
      box_sum_kernel<<<grid_for(count * dim), kThreads, 0, stream>>>(lo, hi, count * dim, s.sums.data());
      KNN_CUDA_CHECK_LAUNCH();
      const std::int32_t* level_order = str_order_device(s.sums.data(), count, dim, fanout, s, stream);
      permute_nodes_kernel<<<grid_for(count), kThreads, 0, stream>>>(lo, hi, t.begin.data() + first,
                                                                      t.end.data() + first, level_order, count, dim,
                                                                      s.lo.data(), s.hi.data(), s.begin.data(),
                                                                      s.end.data());
      KNN_CUDA_CHECK_LAUNCH();
      const std::size_t floats = std::size_t(count) * dim * sizeof(float), ints = std::size_t(count) * sizeof(std::int32_t);
      KNN_CUDA_TRY(cudaMemcpyAsync(lo, s.lo.data(), floats, cudaMemcpyDeviceToDevice, stream));
      KNN_CUDA_TRY(cudaMemcpyAsync(hi, s.hi.data(), floats, cudaMemcpyDeviceToDevice, stream));
      KNN_CUDA_TRY(cudaMemcpyAsync(t.begin.data() + first, s.begin.data(), ints, cudaMemcpyDeviceToDevice, stream));
      KNN_CUDA_TRY(cudaMemcpyAsync(t.end.data() + first, s.end.data(), ints, cudaMemcpyDeviceToDevice, stream));
    }
    parent_boxes_kernel<<<grid_for(parents), kThreads, 0, stream>>>(t.lo.data(), t.hi.data(), first, count,
                                                                     shape.level_begin[level], parents, fanout, dim,
                                                                     t.begin.data(), t.end.data());
    KNN_CUDA_CHECK_LAUNCH();
  }
  return t;
}

namespace {

template <typename T>
std::vector<T> download(const cuda::StreamBuffer<T>& b, cudaStream_t stream) {
  std::vector<T> out(b.size());
  if (!out.empty())
    KNN_CUDA_TRY(cudaMemcpyAsync(out.data(), b.data(), out.size() * sizeof(T), cudaMemcpyDeviceToHost, stream));
  return out;
}

}  // namespace

Tree build_on_device(const float* points, std::int64_t n, int dim, int fanout) {
  cuda::Stream stream;
  Tree out;
  {
    cuda::StreamBuffer<float> device_points(std::size_t(n) * dim, stream);
    KNN_CUDA_TRY(cudaMemcpyAsync(device_points.data(), points, std::size_t(n) * dim * sizeof(float),
                                 cudaMemcpyHostToDevice, stream));
    const DeviceTree t = build_device(device_points.data(), n, dim, fanout, stream);
    out.shape = t.shape;
    out.points = download(t.points, stream);
    out.index = download(t.index, stream);
    out.lo = download(t.lo, stream);
    out.hi = download(t.hi, stream);
    out.begin = download(t.begin, stream);
    out.end = download(t.end, stream);
    stream.synchronize();
  }
  stream.synchronize();
  return out;
}

}  // namespace knn::str
