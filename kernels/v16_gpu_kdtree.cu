// v16: seed 004's data-parallel kd-tree, built and searched entirely on the GPU. The build
// (kernels/common/kdtree_gpu_build.cu) pads the references to a power of two of equal leaves
// (kd_leaves.hpp) and splits every node of a level at once at the median of its widest dimension
// (one CUB radix sort per level), keeping node boxes, split dimensions and split values. The search
// runs in waves: every query starts at its natural leaf; each wave sorts the active (leaf, query)
// keys by leaf (CUB radix sort on the leaf bits only), gives a block 128 consecutive keys, stages the
// block's distinct leaves in shared memory when they fit, and each thread scans its query's leaf
// into a top-k heap in shared memory (kernels/common/shared_topk.cuh, full (distance, index) rule),
// then walks the implicit tree without a stack (near child first; a subtree is skipped when its box,
// or with the median test its splitting plane, is farther than the query's K-th distance) to its
// next leaf. Finished queries drop out; heaps wait in the answer rows between waves. The final steps
// (seed 004's last two): finished queries sort to the end with the active ones instead of a
// separate partition, and once fewer active queries than leaves remain, one kernel runs each of them
// to the end. Knobs: KNN_V16_LEAF (minimum leaf size, default 256), KNN_V16_TEST=box|median,
// KNN_V16_SORT=0|1, KNN_V16_FINAL=0|1, KNN_V16_TAIL (the last kernel takes over below TAIL x leaves
// active queries; default 16, measured on an H100; 1 is the thesis's rule), KNN_V16_VEC=0|1 (leaf rows
// read one float at a time, or as float4 groups: default 1), KNN_V16_STAGE_KIB
// (shared memory for staged leaves, 0-160, default 0: on an H100 the sorted warps read a shared leaf
// through L1 faster, results/h100/v16/stage-*). Distances use v0's roundings, so rows equal v0's,
// ties included.
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/cuda/runtime.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "kernels/common/env_knob.hpp"
#include "kernels/common/kdtree_gpu_walk.cuh"
#include "kernels/common/shared_topk.cuh"
#include "kernels/common/topk_supports.hpp"

namespace {

namespace cuda = knn::cuda;
namespace kd = knn::kd;
using kd::Query;
using kd::TreeView;

constexpr int kBlock = 128;
constexpr int kMaxTopk = 64;   // heaps of 128 threads x 64 pairs fill 64 KiB of shared memory
constexpr int kMaxDim = 128;   // stated limit: a staged leaf row and the box test loop over k

struct Options {
  int min_leaf = 256, stage_kib = 0;
  bool box = true, sort = true, final_steps = true;
  int vec = 1;    // leaf rows: 0 one float at a time, 1 float4 groups
  int tail = 16;  // the last kernel takes over below tail x leaves active queries
  std::string source;  // which knobs came from the environment
};

int knob(const char* name, int fallback, int lo, int hi, std::string& source) {
  const std::optional<int> v = knn::env::int_knob(name, lo, hi, "v16");
  if (!v) return fallback;
  source += fmt::format(" {}={}", name, *v);
  return *v;
}

Options options_from_environment() {
  Options o;
  o.min_leaf = knob("KNN_V16_LEAF", 256, 1, 8192, o.source);
  o.stage_kib = knob("KNN_V16_STAGE_KIB", 0, 0, 160, o.source);
  o.sort = knob("KNN_V16_SORT", 1, 0, 1, o.source) != 0;
  o.final_steps = knob("KNN_V16_FINAL", 1, 0, 1, o.source) != 0;
  o.tail = knob("KNN_V16_TAIL", 16, 1, 1024, o.source);
  o.vec = knob("KNN_V16_VEC", 1, 0, 1, o.source);
  if (const char* t = std::getenv("KNN_V16_TEST"); t != nullptr && *t != '\0') {
    const std::string text(t);
    if (text != "box" && text != "median")
      throw std::invalid_argument(fmt::format("v16: KNN_V16_TEST = '{}': must be box or median", text));
    o.box = text == "box";
    o.source += " KNN_V16_TEST=" + text;
  }
  return o;
}

struct SearchArgs {
  TreeView t;
  const float* __restrict__ queries;
  int topk, count, stage_leaves;
  bool self_join, box, first, to_end;
  int vec;
  const std::uint64_t* __restrict__ keys_in;
  std::uint64_t* __restrict__ keys_out;  // (next leaf, query), leaf = leaves once finished
  std::int32_t* heap_idx;                // the answer rows: raw heaps between waves, sorted when done
  float* heap_dist;
  unsigned* remaining;
  unsigned long long* visits;
};

__device__ __forceinline__ unsigned warp_sum(unsigned v) {
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(0xffffffffu, v, s);
  return v;
}

// One thread per active key (blocks of kBlock consecutive keys): scan the leaf, find the next one.
template <int DIM>
__global__ void __launch_bounds__(kBlock) search_kernel(const SearchArgs a) {
  using Scan = cub::BlockScan<int, kBlock>;
  __shared__ typename Scan::TempStorage scan_temp;
  __shared__ int leaf_of[kBlock], run_leaf[kBlock];
  extern __shared__ __align__(16) float smem[];
  const TreeView& t = a.t;
  const int dim = DIM > 0 ? DIM : t.dim, tid = threadIdx.x, S = t.leaf_size;
  const int stride = DIM > 0 ? (DIM + 3) / 4 * 4 : dim;  // staged row stride: float4 loads when compiled in
  float* heap_d = smem;
  auto* heap_i = reinterpret_cast<std::int32_t*>(heap_d + std::size_t(a.topk) * kBlock);
  float* tile = reinterpret_cast<float*>(heap_i + std::size_t(a.topk) * kBlock);
  auto* tile_index = reinterpret_cast<std::int32_t*>(tile + std::size_t(a.stage_leaves) * S * stride);

  const int item = blockIdx.x * kBlock + tid;
  const bool active = item < a.count;
  const std::uint64_t key = active ? a.keys_in[item] : 0;
  int leaf = active ? int(key >> 32) : -1;
  const int qid = int(unsigned(key));
  // The block's distinct leaves (runs of equal keys when sorted): staged when they fit.
  int run = 0, runs = 0;
  if (a.stage_leaves > 0) {
    leaf_of[tid] = leaf;
    __syncthreads();
    const int start = active && (tid == 0 || leaf_of[tid - 1] != leaf) ? 1 : 0;
    Scan(scan_temp).ExclusiveSum(start, run, runs);
    run += start - 1;
    if (start) run_leaf[run] = leaf;
    __syncthreads();
  }
  const bool staged = a.stage_leaves > 0 && runs <= a.stage_leaves;
  if (staged) {
    const int floats = S * stride;
    for (int e = tid; e < runs * floats; e += kBlock) {
      const int k = e % stride, row = run_leaf[e / floats] * S + (e % floats) / stride;
      tile[e] = k < dim ? __ldg(t.points + std::size_t(row) * dim + k) : 0.f;
    }
    for (int e = tid; e < runs * S; e += kBlock) tile_index[e] = __ldg(t.index + std::size_t(run_leaf[e / S]) * S + e % S);
    __syncthreads();
  }
  knn::gpu::SharedTopK list(heap_d + tid, heap_i + tid, kBlock, a.topk);
  unsigned visited = 0;
  int next = -1;
  if (active) {
    Query<DIM> q;
    q.load(a.queries + std::size_t(qid) * dim, dim);
    std::int32_t* row_i = a.heap_idx + std::size_t(qid) * a.topk;
    float* row_d = a.heap_dist + std::size_t(qid) * a.topk;
    if (a.first) {
      list.clear();
    } else {
      for (int s = 0; s < a.topk; ++s) heap_d[s * kBlock + tid] = row_d[s], heap_i[s * kBlock + tid] = row_i[s];
      list.resume();
    }
    bool from_tile = staged;
    for (;;) {
      if (from_tile) {
        const float* rows = tile + std::size_t(run) * S * stride;
        const std::int32_t* ids = tile_index + std::size_t(run) * S;
        for (int r = 0; r < S; ++r) {
          const float d = kd::staged_distance(q, rows + std::size_t(r) * stride, dim);
          const std::int32_t id = ids[r];
          if (id >= 0 && !(a.self_join && id == qid)) list.offer(d, id);
        }
      } else {
        const float* rows = t.points + std::size_t(leaf) * S * dim;
        const std::int32_t* ids = t.index + std::size_t(leaf) * S;
        int r = 0;
        if constexpr (DIM > 0)
          if (a.vec == 1) r = kd::scan_row_groups(q, rows, ids, S, a.self_join, qid, list);
        for (; r < S; ++r) {
          const float d = kd::row_distance(q, rows + std::size_t(r) * dim, dim);
          if (!(d <= list.worst_distance())) continue;  // the index is read only for a candidate
          const std::int32_t id = __ldg(ids + r);
          if (id >= 0 && !(a.self_join && id == qid)) list.offer(d, id);
        }
      }
      ++visited;
      next = kd::next_leaf(t, q, leaf, list.worst_distance(), a.box);
      if (!a.to_end || next < 0) break;
      leaf = next;
      from_tile = false;
    }
    if (next < 0) {
      list.store(row_i, row_d);
      a.keys_out[item] = (std::uint64_t(t.leaves) << 32) | unsigned(qid);
    } else {
      for (int s = 0; s < a.topk; ++s) row_d[s] = heap_d[s * kBlock + tid], row_i[s] = heap_i[s * kBlock + tid];
      a.keys_out[item] = (std::uint64_t(next) << 32) | unsigned(qid);
    }
  }
  const unsigned going = __popc(__ballot_sync(0xffffffffu, next >= 0));
  const unsigned seen = warp_sum(visited);
  if ((tid & 31) == 0) {
    if (going) atomicAdd(a.remaining, going);
    if (seen) atomicAdd(a.visits, (unsigned long long)seen);
  }
}

bool compiled_dim(int dim) { return dim == 1 || dim == 2 || dim == 3 || dim == 5 || dim == 9 || dim == 12 || dim == 16; }

// Floats per staged row: rounded up to whole float4s for the compiled-in k (as the kernel does).
int staged_stride(int dim) { return compiled_dim(dim) ? (dim + 3) / 4 * 4 : dim; }

std::size_t search_shared(int topk, int stage_leaves, int leaf_size, int dim) {
  return std::size_t(2) * topk * kBlock * 4 + std::size_t(stage_leaves) * leaf_size * (staged_stride(dim) + 1) * 4;
}

int stage_leaves_for(const Options& o, const kd::LeafPlan& plan, int dim) {
  if (!o.sort) return 0;  // unsorted blocks hold as many leaves as queries: read them from global memory
  const std::size_t leaf_bytes = std::size_t(plan.leaf_size) * (staged_stride(dim) + 1) * 4;
  return int(std::min<std::size_t>(kBlock, std::size_t(o.stage_kib) * 1024 / leaf_bytes));
}

void launch_kernel(void (*kernel)(SearchArgs), const SearchArgs& a, cudaStream_t stream) {
  const std::size_t shared = search_shared(a.topk, a.stage_leaves, a.t.leaf_size, a.t.dim);
  KNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  kernel<<<(a.count + kBlock - 1) / kBlock, kBlock, shared, stream>>>(a);
  KNN_CUDA_CHECK_LAUNCH();
}

template <int DIM, int... More>
void dispatch(const SearchArgs& a, cudaStream_t stream) {  // the compiled-in k (compiled_dim), else k = 0
  if constexpr (DIM == 0) {
    launch_kernel(search_kernel<0>, a, stream);
  } else if (a.t.dim != DIM) {
    dispatch<More...>(a, stream);
  } else {
    launch_kernel(search_kernel<DIM>, a, stream);
  }
}

std::optional<std::string> limits(const knn::Problem& p, std::size_t optin) {
  if (p.topk > kMaxTopk) return fmt::format("topk {} over v16's limit of {} (heaps of {} threads in shared memory)", p.topk, kMaxTopk, kBlock);
  if (p.dim > kMaxDim) return fmt::format("k = {} over v16's limit of {}", p.dim, kMaxDim);
  if (p.m < 1 || p.n < 1) return fmt::format("m = {}, n = {}: a kd-tree needs at least one point", p.m, p.n);
  Options o;
  try {
    o = options_from_environment();
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  const kd::LeafPlan plan = kd::plan_leaves(p.n, o.min_leaf);
  const std::size_t need = search_shared(p.topk, stage_leaves_for(o, plan, p.dim), int(plan.leaf_size), p.dim);
  if (need > optin) return fmt::format("topk {} needs {} bytes of shared memory per block; the device allows {}", p.topk, need, optin);
  return std::nullopt;
}

void v16_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  if (ctx.env.devices.empty()) throw std::runtime_error("v16: no CUDA device selected");
  if (auto reason = limits(p, ctx.env.devices[0].shared_per_block_optin)) throw std::invalid_argument("v16: " + *reason);
  const Options o = options_from_environment();
  const kd::LeafPlan plan = kd::plan_leaves(p.n, o.min_leaf);
  const int device = ctx.env.devices[0].ordinal;
  ctx.devices_used = {device};
  cuda::DeviceScope scope(device);

  cuda::Stream stream;  // first: the buffers below are freed on it before it goes back
  cuda::StreamBuffer<float> references(p.reference_floats(), stream);
  cuda::StreamBuffer<float> own_queries(p.self_join ? 0 : p.query_floats(), stream);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), stream);
  cuda::StreamBuffer<float> distances(p.result_slots(), stream);
  cuda::StreamBuffer<std::uint64_t> keys[2] = {{std::size_t(p.m), stream}, {std::size_t(p.m), stream}};
  cuda::StreamBuffer<unsigned> remaining(1, stream);
  cuda::StreamBuffer<unsigned long long> visits(1, stream);
  cuda::StreamBuffer<int> selected(1, stream);  // DeviceSelect's count (the kernel counts too)
  cuda::PinnedStaging<unsigned> remaining_host(1);
  cuda::PinnedStaging<unsigned long long> visits_host(1);
  std::size_t sort_bytes = 0, select_bytes = 0;
  {
    cub::DoubleBuffer<std::uint64_t> k(keys[0].data(), keys[1].data());
    KNN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, k, p.m, 32, 64, stream));
    KNN_CUDA_TRY(cub::DeviceSelect::If(nullptr, select_bytes, keys[0].data(), keys[1].data(), selected.data(), p.m,
                                       kd::StillActive{unsigned(plan.leaves)}, stream));
  }
  cuda::StreamBuffer<unsigned char> temp(std::max<std::size_t>({sort_bytes, select_bytes, 1}), stream);

  cuda::PhaseTimer timer(stream);
  timer.begin("h2d");
  cuda::upload_inputs(p, references.data(), own_queries.data(), stream);
  KNN_CUDA_TRY(cudaMemsetAsync(visits.data(), 0, sizeof(unsigned long long), stream));
  timer.end();
  timer.begin("build_tree");
  const kd::DeviceKdTree tree = kd::build_device(references.data(), plan, p.dim, stream);
  timer.end();
  const float* queries = p.self_join ? references.data() : own_queries.data();
  const TreeView view = kd::view_of(tree);
  timer.begin("search");
  kd::natural_leaf_kernel<<<(p.m + 255) / 256, 256, 0, stream>>>(view, queries, p.m, keys[0].data());
  KNN_CUDA_CHECK_LAUNCH();
  timer.end();

  const int leaf_bits = plan.levels + 1;  // leaves + 1 sentinel values
  const int stage = stage_leaves_for(o, plan, p.dim);
  // keys[cur] holds `items` keys, the `count` active ones first unless finished ones sit among them.
  int cur = 0, items = p.m, count = p.m, sorted_waves = 0;
  std::vector<int> active;
  const auto partition = [&] {  // the finished queries out, order kept
    timer.begin("query_sort");
    std::size_t bytes = temp.size();
    KNN_CUDA_TRY(cub::DeviceSelect::If(temp.data(), bytes, keys[cur].data(), keys[1 - cur].data(), selected.data(),
                                       items, kd::StillActive{unsigned(plan.leaves)}, stream));
    cur = 1 - cur;
    items = count;
    timer.end();
  };
  while (count > 0) {
    const bool sort = o.sort && (!o.final_steps || count >= (long long)plan.leaves * o.tail);
    const bool to_end = o.final_steps && !sort;
    if (items > count && !sort) partition();
    if (sort) {  // finished keys (leaf = leaves) sort to the end
      timer.begin("query_sort");
      cub::DoubleBuffer<std::uint64_t> k(keys[cur].data(), keys[1 - cur].data());
      std::size_t bytes = temp.size();
      KNN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(temp.data(), bytes, k, items, 32, 32 + leaf_bits, stream));
      cur = k.Current() == keys[0].data() ? 0 : 1;
      items = count;
      timer.end();
      ++sorted_waves;
    }
    timer.begin("search");
    KNN_CUDA_TRY(cudaMemsetAsync(remaining.data(), 0, sizeof(unsigned), stream));
    SearchArgs a{view, queries, p.topk, count, sort ? stage : 0, p.self_join, o.box, active.empty(), to_end,
                 o.vec, keys[cur].data(), keys[1 - cur].data(), indices.data(), distances.data(), remaining.data(),
                 visits.data()};
    dispatch<1, 2, 3, 5, 9, 12, 16, 0>(a, stream);
    KNN_CUDA_TRY(cudaMemcpyAsync(remaining_host.data(), remaining.data(), sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    timer.end();
    stream.synchronize();
    active.push_back(count);
    cur = 1 - cur;
    count = int(*remaining_host.data());
    if (to_end && count != 0) throw std::runtime_error(fmt::format("v16: {} queries unfinished after the last wave", count));
    if (count > 0 && !(o.final_steps && o.sort)) partition();
  }
  timer.begin("d2h");
  cuda::download_answers(p, indices.data(), distances.data(), out, stream);
  KNN_CUDA_TRY(cudaMemcpyAsync(visits_host.data(), visits.data(), sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
  timer.end();
  stream.synchronize();
  timer.report(ctx.timing);
  std::string trace;
  for (std::size_t w = 0; w < active.size() && w < 48; ++w) trace += fmt::format("{}{}", w ? " " : "", active[w]);
  if (active.size() > 48) trace += " ...";
  ctx.path = fmt::format(
      "{}, {} leaves x {} rows ({} padding, minimum leaf {}), {} test, {}, final steps {}, rows read {}{}; waves {} ({} sorted), "
      "leaves per query {:.2f}; active per wave: {}",
      compiled_dim(p.dim) ? fmt::format("k={} compiled in", p.dim) : std::string("k at run time"), plan.leaves,
      plan.leaf_size, plan.padding(), o.min_leaf, o.box ? "box" : "median",
      o.sort ? fmt::format("sorted by leaf (up to {} leaves staged per block)", stage) : std::string("unsorted"),
      o.final_steps ? fmt::format("on (the last kernel below {} active queries)", (long long)plan.leaves * o.tail) : "off",
      o.vec == 1 && compiled_dim(p.dim) ? "as float4 groups from aligned leaves" : "one float at a time",
      o.source.empty() ? std::string() : " (" + o.source.substr(1) + ")", active.size(),
      sorted_waves, double(*visits_host.data()) / p.m, trace);
}

std::size_t v16_device_bytes(const knn::Problem& p, const knn::Environment&) {
  if (p.n < 1 || p.m < 1 || p.dim < 1) return 0;
  Options o;
  try {
    o = options_from_environment();
  } catch (const std::exception&) {
  }
  const std::size_t points = p.reference_floats() + (p.self_join ? 0 : p.query_floats());
  return points * sizeof(float) + p.result_slots() * (sizeof(std::int32_t) + sizeof(float)) +
         std::size_t(p.m) * 3 * sizeof(std::uint64_t) + (1u << 20) + kd::device_bytes(kd::plan_leaves(p.n, o.min_leaf), p.dim);
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v16";
  d.title = "kd-tree built and searched on the GPU (padded equal leaves, queries in waves sorted by leaf, box test)";
  d.family = knn::Family::tree;
  d.gpus = knn::GpuNeed::one;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (auto reason = knn::gpu::topk_supports(p, env)) return reason;
    return limits(p, env.devices[0].shared_per_block_optin);
  };
  d.device_bytes = v16_device_bytes;
  d.make = knn::query_only(v16_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
