// v17: seed 003's kNN join with R-trees, on the GPU. Both point sets are packed into R-trees by
// Sort-Tile-Recursive on the device (kernels/trees/rtree/str_pack.cu: one CUB radix sort per pass, no
// host round trip per level; fan-out 32, or v17.fanout in [16, 64]). The join gives one block
// to each query leaf (one thread per query): the block walks the reference tree depth first with
// an explicit stack in shared memory (capacity from the tree's height, overflow checked and
// reported as an error), prunes a node when the MINDIST between its box and the query leaf's box
// exceeds the largest current K-th distance of the leaf's queries, pushes the surviving children
// nearest first, and at a reference leaf stages its points in shared memory; each query whose own
// MINDIST to that leaf does not exceed its K-th distance scans them into its top-k heap in shared
// memory (kernels/device/shared_topk.cuh, full (distance, index) rule: no sort of all distances).
// Distances use v0's float roundings, so rows equal v0's, ties included. A self-join packs one tree
// and skips each query's own row. With v17.answers=direct (the default) and a pinned output, each
// block also writes its leaf's finished rows into the output itself, so the answers' copy runs
// during the join (v17_answers.hpp says why a copy engine cannot: a leaf's rows are scattered).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/cuda/runtime.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "kernels/device/exact_distance.cuh"
#include "kernels/device/shared_topk.cuh"
#include "kernels/device/topk_supports.hpp"
#include "kernels/device/warp_reduce.cuh"
#include "kernels/trees/rtree/str_pack_gpu.hpp"
#include "kernels/trees/rtree/v17_answers.hpp"
#include "kernels/trees/rtree/v17_params.hpp"

namespace {

namespace cuda = knn::cuda;
namespace str = knn::str;
namespace exact = knn::gpu::exact;

constexpr int kMaxBlock = 64;  // threads per block: the fan-out rounded up to warps
constexpr int kMaxGrid = 1 << 20;
constexpr std::size_t kStaticShared = 64;  // the kernel's static shared words (top, warp maxima), rounded up

// A packed tree as the join kernel reads it.
struct TreeView {
  const float* __restrict__ points;
  const std::int32_t* __restrict__ index;
  const float* __restrict__ lo;
  const float* __restrict__ hi;
  const std::int32_t* __restrict__ begin;
  const std::int32_t* __restrict__ end;
  int leaves, root;
};

TreeView view_of(const str::DeviceTree& t) {
  return {t.points.data(), t.index.data(), t.lo.data(),  t.hi.data(),
          t.begin.data(),  t.end.data(),   int(t.shape.leaves()), int(t.shape.root())};
}

struct JoinArgs {
  TreeView p, q;
  int dim, topk, fanout, stack_capacity;
  bool self_join;
  std::int32_t* out_indices;  // device rows, at each query's own row (read back by the block: no __restrict__)
  float* out_distances;
  std::int32_t* host_indices;  // answers=direct: the pinned output's device addresses; else null
  float* host_distances;
  int* overflow;  // set to 1 when a block's stack would overflow
};

// Threads per block for a fan-out: one per query of a leaf, whole warps.
int block_threads(int fanout) { return (fanout + 31) / 32 * 32; }

// Stack entries a depth-first walk needs at most: the unvisited siblings of every level plus one.
int stack_capacity(const str::Shape& s) { return (s.levels() - 1) * (s.fanout - 1) + 1; }

// Dynamic shared memory of one block (4-byte words): heaps, staged leaf, query box, stack, child bounds.
std::size_t shared_bytes(int topk, int dim, int fanout, int capacity) {
  const std::size_t threads = std::size_t(block_threads(fanout));
  const std::size_t words = 2 * std::size_t(topk) * threads + std::size_t(fanout) * (dim + 1) + 2 * std::size_t(dim) +
                            2 * std::size_t(capacity) + threads;
  return words * 4 + kStaticShared;
}

// Squared MINDIST between the query leaf's box [qlo, qhi] and node `node`'s box, in dimension
// order with v0's roundings: no pair of points of the two boxes is closer (rounding is monotone).
template <int DIM>
__device__ __forceinline__ float box_box_mindist(const float* qlo, const float* qhi, const TreeView& p, int node,
                                                 int dim) {
  float sum = 0.f;
  const float* lo = p.lo + std::size_t(node) * dim;
  const float* hi = p.hi + std::size_t(node) * dim;
#pragma unroll
  for (int k = 0; k < (DIM > 0 ? DIM : dim); ++k) {
    const float l = __ldg(lo + k), h = __ldg(hi + k);
    const float gap = h < qlo[k] ? __fsub_rn(qlo[k], h) : (l > qhi[k] ? __fsub_rn(l, qhi[k]) : 0.f);
    sum = __fadd_rn(sum, __fmul_rn(gap, gap));
  }
  return sum;
}

// The same from one query (in registers when DIM > 0, else read from `qrow`) to node `node`'s box.
template <int DIM>
__device__ __forceinline__ float point_box_mindist(const float (&q)[DIM > 0 ? DIM : 1], const float* qrow,
                                                   const TreeView& p, int node, int dim) {
  float sum = 0.f;
  const float* lo = p.lo + std::size_t(node) * dim;
  const float* hi = p.hi + std::size_t(node) * dim;
  if constexpr (DIM > 0) {
#pragma unroll
    for (int k = 0; k < DIM; ++k) sum = exact::add_gap_square(sum, q[k], __ldg(lo + k), __ldg(hi + k));
  } else {
    for (int k = 0; k < dim; ++k) sum = exact::add_gap_square(sum, __ldg(qrow + k), __ldg(lo + k), __ldg(hi + k));
  }
  return sum;
}

// One block per query leaf (grid-stride), thread t for the leaf's query t (threads past the leaf's
// end keep a closed list and take part in the block's decisions only). Every decision is uniform
// across the block: the stack, its top and the bound (largest K-th distance of the leaf's queries)
// are shared; each thread scans a staged reference leaf for its own query.
template <int DIM>
__global__ void __launch_bounds__(kMaxBlock) rtree_join_kernel(const JoinArgs a) {
  extern __shared__ float smem[];
  __shared__ int top;
  __shared__ unsigned warp_max[kMaxBlock / 32];
  const int threads = blockDim.x, t = threadIdx.x, dim = DIM > 0 ? DIM : a.dim;
  float* list_d = smem;
  auto* list_i = reinterpret_cast<std::int32_t*>(list_d + std::size_t(a.topk) * threads);
  float* tile = list_d + 2 * std::size_t(a.topk) * threads;
  auto* tile_index = reinterpret_cast<std::int32_t*>(tile + a.fanout * dim);
  float* qlo = reinterpret_cast<float*>(tile_index + a.fanout);
  float* qhi = qlo + dim;
  auto* stack_node = reinterpret_cast<std::int32_t*>(qhi + dim);
  float* stack_bound = reinterpret_cast<float*>(stack_node + a.stack_capacity);
  float* child_bound = stack_bound + a.stack_capacity;

  for (int leaf = blockIdx.x; leaf < a.q.leaves; leaf += gridDim.x) {
    const int qb = __ldg(a.q.begin + leaf), qe = __ldg(a.q.end + leaf);
    const bool active = qb + t < qe;
    const int qpos = active ? qb + t : qb;
    const int qid = __ldg(a.q.index + qpos);
    const float* qrow = a.q.points + std::size_t(qpos) * dim;
    float q[DIM > 0 ? DIM : 1];
    if constexpr (DIM > 0) {
#pragma unroll
      for (int k = 0; k < DIM; ++k) q[k] = __ldg(qrow + k);
    }
    knn::gpu::SharedTopK list(list_d + t, list_i + t, threads, a.topk);
    if (active)
      list.clear();
    else
      list.close();
    for (int k = t; k < dim; k += threads) {
      qlo[k] = __ldg(a.q.lo + std::size_t(leaf) * dim + k);
      qhi[k] = __ldg(a.q.hi + std::size_t(leaf) * dim + k);
    }
    if (t == 0) {
      top = 1;
      stack_node[0] = a.p.root;
      stack_bound[0] = 0.f;
    }
    float bound = INFINITY;  // the same in every thread
    for (;;) {
      __syncthreads();
      const int size = top;
      if (size == 0) break;
      const int node = stack_node[size - 1];
      const float node_bound = stack_bound[size - 1];
      __syncthreads();  // everyone has read the top before it moves
      if (t == 0) top = size - 1;
      if (node_bound > bound) continue;  // pruned since it was pushed
      const int cb = __ldg(a.p.begin + node), ce = __ldg(a.p.end + node);
      if (node >= a.p.leaves) {
        // Thread t judges child t; survivors go on the stack, nearest on top.
        const int count = ce - cb;
        float md = INFINITY;
        if (t < count) md = box_box_mindist<DIM>(qlo, qhi, a.p, cb + t, dim);
        const bool keep = t < count && !(md > bound);
        child_bound[t] = keep ? md : INFINITY;
        const int kept = __syncthreads_count(keep);
        if (size - 1 + kept > a.stack_capacity) {  // uniform: every thread leaves
          if (t == 0) atomicExch(a.overflow, 1);
          return;
        }
        if (keep) {
          int rank = 0;
          for (int j = 0; j < count; ++j) rank += child_bound[j] < md || (child_bound[j] == md && j < t);
          const int pos = size - 1 + kept - 1 - rank;
          stack_node[pos] = cb + t;
          stack_bound[pos] = md;
        }
        if (t == 0) top = size - 1 + kept;
        continue;
      }
      // A reference leaf: stage its rows, then each query that its box does not rule out scans them.
      const int rows = ce - cb;
      for (int e = t; e < rows * dim; e += threads) tile[e] = __ldg(a.p.points + std::size_t(cb) * dim + e);
      for (int r = t; r < rows; r += threads) tile_index[r] = __ldg(a.p.index + cb + r);
      __syncthreads();
      if (active) {
        if (!(point_box_mindist<DIM>(q, qrow, a.p, node, dim) > list.worst_distance())) {
          for (int r = 0; r < rows; ++r) {
            const float* row = tile + r * dim;
            float d = 0.f;
            if constexpr (DIM > 0) {
#pragma unroll
              for (int k = 0; k < DIM; ++k) d = exact::add_square(d, q[k], row[k]);
            } else {
              for (int k = 0; k < dim; ++k) d = exact::add_square(d, __ldg(qrow + k), row[k]);
            }
            const std::int32_t i = tile_index[r];
            if (!(a.self_join && i == qid)) list.offer(d, i);
          }
        }
      }
      // The new bound: the largest K-th distance of the leaf's queries (>= 0, so the bits order).
      const unsigned mine = __float_as_uint(active ? list.worst_distance() : 0.f);
      const unsigned warp = knn::gpu::warp::max(mine);  // a butterfly: __reduce_max_sync needs sm_80, the build also targets sm_75
      if ((t & 31) == 0) warp_max[t >> 5] = warp;
      __syncthreads();
      unsigned all = warp_max[0];
      for (int w = 1; w < threads / 32; ++w) all = max(all, warp_max[w]);
      bound = __uint_as_float(all);
    }
    if (active) list.store(a.out_indices + std::size_t(qid) * a.topk, a.out_distances + std::size_t(qid) * a.topk);
    if (a.host_indices != nullptr) {
      // answers=direct: the leaf's rows, just stored by its threads (visible to the whole block after
      // the barrier; no other block writes them), go on to the pinned output. Consecutive threads
      // take consecutive slots of one row, so at topk >= 32 a warp writes 128 contiguous bytes.
      __syncthreads();
      const int slots = (qe - qb) * a.topk;
      for (int e = t; e < slots; e += threads) {
        const std::size_t at = knn::gpu::v17::leaf_slot(a.q.index, qb, e, a.topk);
        a.host_indices[at] = a.out_indices[at];
        a.host_distances[at] = a.out_distances[at];
      }
    }
    __syncthreads();  // the next leaf reuses the shared arrays
  }
}

template <int DIM>
void launch(const JoinArgs& a, cudaStream_t stream) {
  const std::size_t shared = shared_bytes(a.topk, a.dim, a.fanout, a.stack_capacity) - kStaticShared;
  const auto kernel = rtree_join_kernel<DIM>;
  KNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  const int grid = std::min(a.q.leaves, kMaxGrid);
  kernel<<<grid, block_threads(a.fanout), shared, stream>>>(a);
  KNN_CUDA_CHECK_LAUNCH();
}

bool compiled_dim(int dim) { return dim == 2 || dim == 3 || dim == 8 || dim == 16; }

void dispatch(const JoinArgs& a, cudaStream_t stream) {
  switch (a.dim) {
    case 2: return launch<2>(a, stream);
    case 3: return launch<3>(a, stream);
    case 8: return launch<8>(a, stream);
    case 16: return launch<16>(a, stream);
    default: return launch<0>(a, stream);
  }
}

// The fan-out: the parameter fanout (an integer in [16, 64], default 32).
int fanout_of(const knn::ParamValues& params) { return int(params.integer("fanout")); }

bool set_by_user(const knn::ParamValues& params) {
  const std::vector<std::string>& set = params.set_names();
  return std::find(set.begin(), set.end(), "fanout") != set.end();
}

std::optional<std::string> topk_over_limit(const knn::Problem& p, int fanout, std::size_t limit) {
  const std::size_t need = shared_bytes(p.topk, p.dim, fanout, stack_capacity(str::plan_tree(p.n, p.dim, fanout)));
  if (need <= limit) return std::nullopt;
  return fmt::format(
      "topk {} with k = {} needs {} bytes of shared memory per block ({} heaps of {} pairs, a staged leaf, the stack); "
      "the device allows {} bytes per block",
      p.topk, p.dim, need, block_threads(fanout), p.topk, limit);
}

void v17_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  if (ctx.env.devices.empty()) throw std::runtime_error("v17: no CUDA device selected");
  if (p.self_join && p.m != p.n)
    throw std::invalid_argument(fmt::format("v17: a self-join needs m == n (m = {}, n = {})", p.m, p.n));
  const int fanout = fanout_of(ctx.env.params);
  const int device = ctx.env.devices[0].ordinal;
  ctx.devices_used = {device};
  cuda::DeviceScope scope(device);
  int optin = 0;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (const auto reason = topk_over_limit(p, fanout, std::size_t(optin))) throw std::invalid_argument("v17: " + *reason);

  cuda::Stream stream;  // first: the buffers below are freed on it before it goes back
  cuda::StreamBuffer<float> references(p.reference_floats(), stream);
  cuda::StreamBuffer<float> own_queries(p.self_join ? 0 : p.query_floats(), stream);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), stream);
  cuda::StreamBuffer<float> distances(p.result_slots(), stream);
  cuda::StreamBuffer<int> overflow(1, stream);
  cuda::PinnedStaging<int> overflow_host(1);

  cuda::PhaseTimer timer(stream);
  timer.begin("h2d");
  cuda::upload_inputs(p, references.data(), own_queries.data(), stream);
  KNN_CUDA_TRY(cudaMemsetAsync(overflow.data(), 0, sizeof(int), stream));
  timer.end();
  timer.begin("build_p");
  const str::DeviceTree ptree = str::build_device(references.data(), p.n, p.dim, fanout, stream);
  timer.end();
  std::unique_ptr<str::DeviceTree> own_qtree;
  if (!p.self_join) {
    timer.begin("build_q");
    own_qtree = std::make_unique<str::DeviceTree>(str::build_device(own_queries.data(), p.m, p.dim, fanout, stream));
    timer.end();
  }
  const str::DeviceTree& qtree = p.self_join ? ptree : *own_qtree;

  void* host_indices = cuda::mapped_address(out.indices);
  void* host_distances = cuda::mapped_address(out.distances);
  const auto route = knn::gpu::v17::route_answers(ctx.env.params.text("answers"), host_indices != nullptr,
                                                  host_distances != nullptr);
  JoinArgs a{view_of(ptree), view_of(qtree), p.dim, p.topk, fanout, stack_capacity(ptree.shape), p.self_join,
             indices.data(), distances.data(),
             route.direct ? static_cast<std::int32_t*>(host_indices) : nullptr,
             route.direct ? static_cast<float*>(host_distances) : nullptr, overflow.data()};
  // Direct: one phase, the join and the answers' copy together (they overlap; never shown as serial).
  timer.begin(route.direct ? "join_d2h" : "join");
  dispatch(a, stream);
  timer.end();
  if (!route.direct) {
    timer.begin("d2h");
    cuda::download_answers(p, indices.data(), distances.data(), out, stream);
  }
  KNN_CUDA_TRY(cudaMemcpyAsync(overflow_host.data(), overflow.data(), sizeof(int), cudaMemcpyDeviceToHost, stream));
  if (!route.direct) timer.end();
  stream.synchronize();
  if (*overflow_host.data() != 0)
    throw std::runtime_error(fmt::format("v17: a join block's stack of {} entries overflowed (tree of {} levels, "
                                         "fan-out {}): answers incomplete",
                                         a.stack_capacity, ptree.shape.levels(), fanout));
  timer.report(ctx.timing);
  ctx.path = fmt::format("{}, fan-out {} ({}), P tree {} levels / {} leaves, {}, stack of {}, heaps of {} in shared memory; {}",
                         compiled_dim(p.dim) ? fmt::format("k={} compiled in", p.dim) : std::string("k at run time"),
                         fanout, set_by_user(ctx.env.params) ? "set by fanout" : "default", ptree.shape.levels(),
                         ptree.shape.leaves(),
                         p.self_join ? std::string("self-join: one tree, own row skipped")
                                     : fmt::format("Q tree {} leaves", qtree.shape.leaves()),
                         a.stack_capacity, p.topk, route.text);
}

std::size_t v17_device_bytes(const knn::Problem& p, const knn::Environment& env) {
  const int fanout = fanout_of(env.params);
  if (p.n < 1 || p.m < 1 || p.dim < 1) return 0;
  const std::size_t points = p.reference_floats() + (p.self_join ? 0 : p.query_floats());
  return points * sizeof(float) + p.result_slots() * (sizeof(std::int32_t) + sizeof(float)) +
         str::device_bytes(p.n, p.dim, fanout) + (p.self_join ? 0 : str::device_bytes(p.m, p.dim, fanout));
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v17";
  d.title = "R-tree kNN join on the GPU (STR-packed trees of both sets, leaf-against-tree walk, shared-memory heaps)";
  d.family = knn::Family::gpu;
  d.gpus = knn::GpuNeed::one;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (auto reason = knn::gpu::topk_supports(p, env)) return reason;
    if (p.m < 1 || p.n < 1) return fmt::format("m = {}, n = {}: an R-tree needs at least one point", p.m, p.n);
    return topk_over_limit(p, fanout_of(env.params), env.devices[0].shared_per_block_optin);
  };
  d.device_bytes = v17_device_bytes;
  d.make = knn::query_only(v17_query);
  d.params = knn::gpu::v17_params();
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
