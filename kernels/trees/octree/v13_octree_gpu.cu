// v13: octree on the GPU, k = 3 only. build(): v12's host builder (centre splits, 32-point
// leaves, tight boxes), then the flat arrays are uploaded (phase "h2d"): 32-byte nodes (two float4
// loads each), rows in leaf order padded to float4. query(): a query walks the tree iteratively
// with one frame per level (the node and its unvisited children, nearest box first, packed in one
// word), at most kOctreeMaxDepth frames, no recursion on the device; the top-k list lives in
// registers (compile-time capacity 1, 8 or 32). One query per thread, or per warp (lanes share
// each leaf scan) when the queries are too few to fill the GPU. Exact, with v0's distances and
// tie rule.
#include <omp.h>

#include <cstdint>
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
#include "kernels/trees/octree/octree.hpp"

namespace {

namespace gpu = knn::tree::gpu;
namespace exact = knn::gpu::exact;
namespace cuda = knn::cuda;

constexpr int kLeafSize = 32;
constexpr int kFrames = knn::tree::kOctreeMaxDepth;  // internal nodes on a path: levels 0 .. max - 1

struct OctView {
  float margin;
  const float4* __restrict__ nodes;  // two float4 per node: (lo, first) and (hi, count)
  const std::int32_t* __restrict__ min_index;
  const float4* __restrict__ points;  // rows (x, y, z, 0), leaf order
  const std::int32_t* __restrict__ index;
};

__device__ __forceinline__ float box_bound(const float4& lo, const float4& hi, const float (&q)[3], float margin) {
  float sum = 0.f;
  sum = exact::add_gap_square(sum, q[0], lo.x, hi.x);
  sum = exact::add_gap_square(sum, q[1], lo.y, hi.y);
  sum = exact::add_gap_square(sum, q[2], lo.z, hi.z);
  return __fmul_rn(sum, margin);
}

// One query per thread (WARP = false) or per warp (WARP = true), grid-stride over queries. A
// frame holds an internal node and its children still to visit, sorted by box distance; a child
// whose box is beyond the worst kept pair ends its frame (the rest are farther), a leaf child is
// scanned, an internal child gets a frame of its own. In warp mode the lanes walk the tree in
// lockstep (same data, same decisions, each lane holds the same list and frames) and share the
// leaf scan, one row per lane; rows that beat the worst pair are offered to every lane's list in
// lane order. No shared memory, no block-level synchronisation.
template <int CAP, bool WARP>
__global__ void __launch_bounds__(gpu::kSearchBlock)
    octree_search_kernel(const OctView t, const float* __restrict__ queries, int m, int topk,
                         std::int32_t* __restrict__ out_indices, float* __restrict__ out_distances) {
  const int lane = threadIdx.x & 31;
  const int worker = (blockIdx.x * blockDim.x + threadIdx.x) / (WARP ? 32 : 1);
  const int workers = gridDim.x * blockDim.x / (WARP ? 32 : 1);
  for (int qi = worker; qi < m; qi += workers) {
    const float q[3] = {__ldg(queries + 3 * std::size_t(qi)), __ldg(queries + 3 * std::size_t(qi) + 1),
                        __ldg(queries + 3 * std::size_t(qi) + 2)};
    gpu::TopKList<CAP> top;
    top.init(topk);
    auto distance = [&](int r) {
      const float4 p = __ldg(t.points + r);
      float d = 0.f;
      d = exact::add_square(d, q[0], p.x);
      d = exact::add_square(d, q[1], p.y);
      return exact::add_square(d, q[2], p.z);
    };
    auto scan = [&](int first, int count) { gpu::scan_leaf<WARP>(top, lane, first, first + count, t.index, distance); };
    // Children of `node` nearer than the worst pair, ranked by (bound, offset) without any
    // run-time register indexing: order packs the offsets, 3 bits each, nearest in the low bits,
    // and their number in bits 24-27.
    auto order_children = [&](int first, int children) -> std::uint32_t {
      float bound[8];
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        bound[c] = INFINITY;
        if (c < children) {
          const float b = box_bound(__ldg(t.nodes + 2 * (first + c)), __ldg(t.nodes + 2 * (first + c) + 1), q, t.margin);
          if (!(b > top.worst_distance())) bound[c] = b;
        }
      }
      std::uint32_t order = 0, kept = 0;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        if (c < children && bound[c] != INFINITY) {
          int rank = 0;
#pragma unroll
          for (int o = 0; o < 8; ++o) rank += (bound[o] < bound[c]) || (bound[o] == bound[c] && o < c);
          order |= std::uint32_t(c) << (3 * rank);
          ++kept;
        }
      }
      return order | (kept << 24);
    };

    const float4 root_hi = __ldg(t.nodes + 1);
    const int root_count = __float_as_int(root_hi.w);
    if (root_count > 0) {
      scan(__float_as_int(__ldg(t.nodes).w), root_count);
    } else {
      int frame_node[kFrames];
      std::uint32_t frame_order[kFrames];
      int size = 1;
      frame_node[0] = 0;
      frame_order[0] = order_children(__float_as_int(__ldg(t.nodes).w), -root_count);
      while (size > 0) {
        const std::uint32_t order = frame_order[size - 1];
        const std::uint32_t remaining = order >> 24;
        if (remaining == 0) {
          --size;
          continue;
        }
        frame_order[size - 1] = ((remaining - 1) << 24) | ((order & 0xffffffu) >> 3);
        const int child = __float_as_int(__ldg(t.nodes + 2 * frame_node[size - 1]).w) + int(order & 7u);
        const float4 lo = __ldg(t.nodes + 2 * child);
        const float4 hi = __ldg(t.nodes + 2 * child + 1);
        const float b = box_bound(lo, hi, q, t.margin);
        if (b > top.worst_distance()) {  // siblings still to come are at least this far
          --size;
          continue;
        }
        if (b == top.worst_distance() && __ldg(t.min_index + child) > top.worst_index()) continue;
        const int first = __float_as_int(lo.w), count = __float_as_int(hi.w);
        if (count > 0) {
          scan(first, count);
        } else {
          frame_node[size] = child;
          frame_order[size] = order_children(first, -count);
          ++size;
        }
      }
    }
    if (!WARP || lane == 0)
      top.store(topk, out_indices + std::size_t(qi) * topk, out_distances + std::size_t(qi) * topk);
  }
}

struct DeviceTree {
  cuda::Stream stream;
  cuda::DeviceBuffer<knn::tree::OctreeNode> nodes;
  cuda::DeviceBuffer<std::int32_t> min_index;
  cuda::DeviceBuffer<float4> points;
  cuda::DeviceBuffer<std::int32_t> index;
  OctView view{};
};

class OctreeGpu final : public gpu::GpuTreeInstance<DeviceTree> {
 public:
  OctreeGpu() : GpuTreeInstance("v13", "octree") {}

  void build(const knn::Problem& p, knn::RunContext& ctx) override {
    if (p.dim != 3) throw std::invalid_argument("v13: octree needs k = 3");
    select_device(ctx);
    const int threads = knn::tree::tree_threads(ctx.env, p.n, 1 << 14);
    const knn::tree::Octree tree = knn::tree::build_octree(p.references, p.n, kLeafSize, threads);
    std::vector<float4> points(std::size_t(p.n));
#pragma omp parallel for num_threads(threads) schedule(static) default(none) shared(tree, points, p)
    for (int r = 0; r < p.n; ++r) {
      const float* row = &tree.points[std::size_t(r) * 3];
      points[std::size_t(r)] = make_float4(row[0], row[1], row[2], 0.f);
    }

    DeviceTree& d = upload_tree(ctx, [&](DeviceTree& d) {
      gpu::upload(d.nodes, tree.nodes, d.stream);
      gpu::upload(d.min_index, tree.min_index, d.stream);
      gpu::upload(d.points, points, d.stream);
      gpu::upload(d.index, tree.index, d.stream);
    });
    d.view = OctView{knn::tree::lower_bound_margin(3), reinterpret_cast<const float4*>(d.nodes.data()),
                     d.min_index.data(), d.points.data(), d.index.data()};
    n_ = p.n;
  }

  void search(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) override {
    bool warp = false;
    query_on_device(p, out, ctx, p.dim == 3 && p.n == n_, [&](DeviceTree& d) {
      // Warp mode when one thread per query would leave most of the GPU idle (few queries).
      warp = gpu::few_queries(p.m, device());
      return [&](const float* queries, std::int32_t* indices, float* distances) {
        gpu::with_list_capacity(p.topk, [&](auto capacity) {
          constexpr int CAP = decltype(capacity)::value;
          gpu::launch_search(warp ? octree_search_kernel<CAP, true> : octree_search_kernel<CAP, false>, warp, d.view,
                             queries, p.m, p.topk, indices, distances, d.stream);
        });
      };
    });
    ctx.path = std::string(warp ? "warp per query" : "thread per query") + ", list of " +
               std::to_string(gpu::list_capacity(p.topk));
  }

 private:
  int n_ = 0;
};

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v13";
  d.title = "octree on the GPU (k = 3, host-built tree, a thread or a warp per query, iterative search)";
  d.family = knn::Family::tree;
  d.gpus = knn::GpuNeed::one;
  d.has_build = true;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (p.dim != 3) return std::string("octree needs k = 3");
    if (env.devices.empty()) return std::string("no CUDA device");
    if (p.topk > gpu::kMaxTopk - (p.self_join ? 1 : 0))
      return std::string(p.self_join ? "GPU octree supports topk ≤ 31 in a self-join (it searches topk + 1)"
                                     : "GPU octree supports topk ≤ 32");
    if (p.n < 1) return std::string("octree needs at least one reference point");
    return std::nullopt;
  };
  // The tree is built on the host before its upload (v12's builder).
  d.host_bytes = [](const knn::Problem& p, const knn::Environment&) { return knn::tree::octree_host_bytes(std::size_t(p.n)); };
  d.make = [] { return std::make_unique<OctreeGpu>(); };
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
