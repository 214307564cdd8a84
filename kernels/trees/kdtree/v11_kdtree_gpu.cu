// v11: kd-tree on the GPU. build(): v10's host builder (median splits, tight boxes), then the
// flat arrays are uploaded (phase "h2d"): split records, interleaved node boxes, leaf offsets,
// rows in leaf order (padded to 4 floats when k = 3, so a row is one 16-byte load).
// query(): a query descends to its own leaf and backtracks iteratively through a fixed local
// stack of at most `depth` entries (checked at build; no recursion on the device); the top-k list
// lives in registers (compile-time capacity 1, 8 or 32). Two mappings, chosen at build with the
// leaf size: one query per thread (16-point leaves), or one query per warp whose lanes share each
// leaf scan (32-point leaves) when k is high or the queries too few to fill the GPU.
// Exact, with v0's distances and tie rule.
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda/runtime.hpp"
#include "core/registry.hpp"
#include "kernels/device/exact_distance.cuh"
#include "kernels/device/tree_threads.hpp"
#include "kernels/trees/common/tree_driver.hpp"
#include "kernels/trees/common/tree_gpu.cuh"
#include "kernels/trees/common/tree_topk.hpp"
#include "kernels/trees/kdtree/kdtree.hpp"

namespace {

namespace gpu = knn::tree::gpu;
namespace exact = knn::gpu::exact;
namespace cuda = knn::cuda;

constexpr int kLeafSize = 16;      // one query per thread: a leaf is scanned row by row
constexpr int kWarpLeafSize = 32;  // one query per warp: a leaf is one row per lane
constexpr int kWarpMinDim = 8;     // from this k on, a search visits many leaves: warp mode
constexpr int kStackCapacity = 32;  // entries per thread; a search needs at most tree.depth

// One internal node's split, loaded as one 8-byte word.
struct alignas(8) SplitRecord {
  float value;
  std::int32_t dim;
};

struct KdView {
  int dim;
  int stride;      // floats per row and per half box: 4 when dim = 3, else dim
  int first_leaf;  // node id of leaf 0
  float margin;    // lower_bound_margin(dim)
  const SplitRecord* __restrict__ split;
  const float* __restrict__ box;  // per node: lo[stride] then hi[stride]
  const std::int32_t* __restrict__ min_index;
  const std::int32_t* __restrict__ leaf_begin;
  const float* __restrict__ points;  // rows of `stride` floats, leaf order
  const std::int32_t* __restrict__ index;
};

// Loads DIM floats from an address aligned to 16 bytes (DIM = 3 reads one padded float4).
template <int DIM>
__device__ __forceinline__ void load_vec(const float* __restrict__ p, float (&v)[DIM]) {
  if constexpr (DIM % 4 == 0 || DIM == 3) {
    constexpr int kVectors = (DIM + 3) / 4;
#pragma unroll
    for (int c = 0; c < kVectors; ++c) {
      const float4 f = __ldg(reinterpret_cast<const float4*>(p) + c);
      v[4 * c] = f.x;
      if (4 * c + 1 < DIM) v[4 * c + 1] = f.y;
      if (4 * c + 2 < DIM) v[4 * c + 2] = f.z;
      if (4 * c + 3 < DIM) v[4 * c + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int t = 0; t < DIM; ++t) v[t] = __ldg(p + t);
  }
}

// Squared distance from the query to a row / to a node's box. DIM > 0: the query is in registers;
// DIM = 0: dim is known at run time and the query is read from global memory (L1-cached).
template <int DIM>
__device__ __forceinline__ float row_distance(const KdView& t, const float (&q)[DIM > 0 ? DIM : 1],
                                              const float* __restrict__ query, int row) {
  const float* p = t.points + std::size_t(row) * t.stride;
  float sum = 0.f;
  if constexpr (DIM > 0) {
    float v[DIM];
    load_vec<DIM>(p, v);
#pragma unroll
    for (int k = 0; k < DIM; ++k) sum = exact::add_square(sum, q[k], v[k]);
  } else {
    for (int k = 0; k < t.dim; ++k) sum = exact::add_square(sum, __ldg(query + k), __ldg(p + k));
  }
  return sum;
}

template <int DIM>
__device__ __forceinline__ float box_bound(const KdView& t, const float (&q)[DIM > 0 ? DIM : 1],
                                           const float* __restrict__ query, int node) {
  const float* lo = t.box + std::size_t(node) * 2 * t.stride;
  const float* hi = lo + t.stride;
  float sum = 0.f;
  if constexpr (DIM > 0) {
    float l[DIM], h[DIM];
    load_vec<DIM>(lo, l);
    load_vec<DIM>(hi, h);
#pragma unroll
    for (int k = 0; k < DIM; ++k) sum = exact::add_gap_square(sum, q[k], l[k], h[k]);
  } else {
    for (int k = 0; k < t.dim; ++k) sum = exact::add_gap_square(sum, __ldg(query + k), __ldg(lo + k), __ldg(hi + k));
  }
  return __fmul_rn(sum, t.margin);
}

// Query coordinate `k` for a run-time k: a select chain over registers for small DIM (no local
// memory), else a cached global load.
template <int DIM>
__device__ __forceinline__ float query_coord(const float (&q)[DIM > 0 ? DIM : 1], const float* __restrict__ query, int k) {
  if constexpr (DIM > 0 && DIM <= 4) {
    float v = q[0];
#pragma unroll
    for (int c = 1; c < DIM; ++c) v = k == c ? q[c] : v;
    return v;
  } else {
    return __ldg(query + k);
  }
}

// One query per thread (WARP = false) or per warp (WARP = true), grid-stride over queries. The
// search descends from the root to the leaf on the query's side of every split, pushing the far
// child when neither its split plane nor its tight box is beyond the worst kept pair, scans the
// leaf, then pops the most recently pushed subtree, until the stack is empty. In warp mode the 32
// lanes walk the tree in lockstep (same data, same decisions, each lane holds the same list and
// stack) and share the leaf scan, one row per lane; the rows that beat the worst pair are then
// offered to every lane's list in lane order. No shared memory, no block-level synchronisation.
template <int DIM, int CAP, bool WARP>
__global__ void __launch_bounds__(gpu::kSearchBlock)
    kdtree_search_kernel(const KdView t, const float* __restrict__ queries, int m, int topk,
                         std::int32_t* __restrict__ out_indices, float* __restrict__ out_distances) {
  const int dim = DIM > 0 ? DIM : t.dim;
  const int lane = threadIdx.x & 31;
  const int worker = (blockIdx.x * blockDim.x + threadIdx.x) / (WARP ? 32 : 1);
  const int workers = gridDim.x * blockDim.x / (WARP ? 32 : 1);
  for (int qi = worker; qi < m; qi += workers) {
    const float* query = queries + std::size_t(qi) * dim;
    float q[DIM > 0 ? DIM : 1];
    if constexpr (DIM > 0) {
#pragma unroll
      for (int k = 0; k < DIM; ++k) q[k] = __ldg(query + k);
    }
    gpu::TopKList<CAP> top;
    top.init(topk);
    // Prune test with the min_index load only in the (rare) tie case.
    auto prune = [&](float bound, int node) {
      return bound > top.worst_distance() ||
             (bound == top.worst_distance() && __ldg(t.min_index + node) > top.worst_index());
    };

    int stack_node[kStackCapacity];
    float stack_bound[kStackCapacity];
    int size = 1;
    stack_node[0] = 0;
    stack_bound[0] = 0.f;
    while (size > 0) {
      --size;
      const int popped = stack_node[size];
      if (prune(stack_bound[size], popped)) continue;
      int node = popped;
      while (node < t.first_leaf) {
        const SplitRecord s = t.split[node];
        const float diff = __fsub_rn(query_coord<DIM>(q, query, s.dim), s.value);
        const int left = 2 * node + 1;
        const int far = diff < 0.f ? left + 1 : left;
        node = diff < 0.f ? left : left + 1;
        if (!prune(__fmul_rn(__fmul_rn(diff, diff), t.margin), far)) {
          const float bound = box_bound<DIM>(t, q, query, far);
          if (!prune(bound, far)) {
            stack_node[size] = far;
            stack_bound[size] = bound;
            ++size;
          }
        }
      }
      if (node != popped && prune(box_bound<DIM>(t, q, query, node), node)) continue;
      const int leaf = node - t.first_leaf;
      const int begin = __ldg(t.leaf_begin + leaf), end = __ldg(t.leaf_begin + leaf + 1);
      gpu::scan_leaf<WARP>(top, lane, begin, end, t.index,
                           [&](int r) { return row_distance<DIM>(t, q, query, r); });
    }
    if (!WARP || lane == 0)
      top.store(topk, out_indices + std::size_t(qi) * topk, out_distances + std::size_t(qi) * topk);
  }
}

// Enqueues the search for rows of DIM floats (0: dim at run time) with the list that fits topk.
template <int DIM>
void launch(bool warp, const KdView& view, const float* queries, int m, int topk, std::int32_t* indices,
            float* distances, cudaStream_t stream) {
  gpu::with_list_capacity(topk, [&](auto capacity) {
    constexpr int CAP = decltype(capacity)::value;
    gpu::launch_search(warp ? kdtree_search_kernel<DIM, CAP, true> : kdtree_search_kernel<DIM, CAP, false>, warp,
                       view, queries, m, topk, indices, distances, stream);
  });
}

// Everything the instance keeps on its device.
struct DeviceTree {
  cuda::Stream stream;
  cuda::DeviceBuffer<SplitRecord> split;
  cuda::DeviceBuffer<float> box;
  cuda::DeviceBuffer<std::int32_t> min_index;
  cuda::DeviceBuffer<std::int32_t> leaf_begin;
  cuda::DeviceBuffer<float> points;
  cuda::DeviceBuffer<std::int32_t> index;
  KdView view{};
};

// Warp mode when a search visits many leaves (high k), or when one thread per query would leave
// most of the GPU idle (few queries). On an H100, (3, 1024, 2^20): 0.05 ms per warp vs 0.14 ms
// per thread; (3, 2^20, 2^20): 3.0 ms vs 0.7 ms; (16, 1024, 2^20): 35 ms vs 275 ms.
bool use_warp_mode(const knn::Problem& p, int device) {
  return p.dim >= kWarpMinDim || gpu::few_queries(p.m, device);
}

class KdTreeGpu final : public gpu::GpuTreeInstance<DeviceTree> {
 public:
  KdTreeGpu() : GpuTreeInstance("v11", "kd-tree") {}

  void build(const knn::Problem& p, knn::RunContext& ctx) override {
    select_device(ctx);
    const int threads = knn::tree::tree_threads(ctx.env, p.n, 1 << 14);
    warp_ = use_warp_mode(p, device());
    const knn::tree::KdTree tree =
        knn::tree::build_kdtree(p.references, p.n, p.dim, warp_ ? kWarpLeafSize : kLeafSize, threads);
    if (tree.depth > kStackCapacity)
      throw std::runtime_error("v11: kd-tree depth " + std::to_string(tree.depth) + " exceeds the GPU stack of " +
                               std::to_string(kStackCapacity) + " entries");

    // Device layout: split records, boxes interleaved per node, rows padded to `stride` floats.
    const int dim = p.dim;
    const int stride = dim == 3 ? 4 : dim;
    std::vector<SplitRecord> split(tree.split_dim.size());
    for (std::size_t i = 0; i < split.size(); ++i) split[i] = SplitRecord{tree.split_value[i], tree.split_dim[i]};
    const std::size_t nodes = std::size_t(tree.node_count());
    std::vector<float> box(nodes * 2 * std::size_t(stride), 0.f);
    std::vector<float> points(std::size_t(p.n) * std::size_t(stride), 0.f);
#pragma omp parallel num_threads(threads) default(none) shared(tree, box, points, nodes, dim, stride, p)
    {
#pragma omp for schedule(static) nowait
      for (std::int64_t i = 0; i < std::int64_t(nodes); ++i) {
        std::memcpy(&box[std::size_t(i) * 2 * stride], &tree.box_lo[std::size_t(i) * dim], sizeof(float) * dim);
        std::memcpy(&box[std::size_t(i) * 2 * stride + stride], &tree.box_hi[std::size_t(i) * dim], sizeof(float) * dim);
      }
#pragma omp for schedule(static)
      for (int r = 0; r < p.n; ++r)
        std::memcpy(&points[std::size_t(r) * stride], &tree.points[std::size_t(r) * dim], sizeof(float) * dim);
    }

    DeviceTree& d = upload_tree(ctx, [&](DeviceTree& d) {
      gpu::upload(d.split, split, d.stream);
      gpu::upload(d.box, box, d.stream);
      gpu::upload(d.min_index, tree.min_index, d.stream);
      gpu::upload(d.leaf_begin, tree.leaf_begin, d.stream);
      gpu::upload(d.points, points, d.stream);
      gpu::upload(d.index, tree.index, d.stream);
    });
    d.view = KdView{dim,          stride,          tree.internal_count(), knn::tree::lower_bound_margin(dim),
                    d.split.data(), d.box.data(), d.min_index.data(),    d.leaf_begin.data(),
                    d.points.data(), d.index.data()};
    n_ = p.n;
    dim_ = dim;
  }

  void search(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) override {
    query_on_device(p, out, ctx, p.dim == dim_ && p.n == n_, [&](DeviceTree& d) {
      return [&](const float* queries, std::int32_t* indices, float* distances) {
        if (p.dim == 3)
          launch<3>(warp_, d.view, queries, p.m, p.topk, indices, distances, d.stream);
        else if (p.dim == 16)
          launch<16>(warp_, d.view, queries, p.m, p.topk, indices, distances, d.stream);
        else
          launch<0>(warp_, d.view, queries, p.m, p.topk, indices, distances, d.stream);
      };
    });
    ctx.path = std::string(warp_ ? "warp per query" : "thread per query") + ", " +
               (p.dim == 3 || p.dim == 16 ? "k=" + std::to_string(p.dim) : std::string("k at run time")) + ", list of " +
               std::to_string(gpu::list_capacity(p.topk));
  }

 private:
  int n_ = 0, dim_ = 0;
  bool warp_ = false;  // one query per warp (else per thread); fixed at build with the leaf size
};

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v11";
  d.title = "kd-tree on the GPU (host-built tree, a thread or a warp per query, iterative stack search)";
  d.family = knn::Family::tree;
  d.gpus = knn::GpuNeed::one;
  d.has_build = true;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (env.devices.empty()) return std::string("no CUDA device");
    if (p.topk > gpu::kMaxTopk - (p.self_join ? 1 : 0))
      return std::string(p.self_join ? "GPU kd-tree supports topk ≤ 31 in a self-join (it searches topk + 1)"
                                     : "GPU kd-tree supports topk ≤ 32");
    if (p.n < 1) return std::string("kd-tree needs at least one reference point");
    return std::nullopt;
  };
  // The tree is built on the host before its upload (v10's builder).
  d.host_bytes = [](const knn::Problem& p, const knn::Environment&) {
    return knn::tree::kdtree_host_bytes(std::size_t(p.n), std::size_t(p.dim));
  };
  d.make = [] { return std::make_unique<KdTreeGpu>(); };
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
