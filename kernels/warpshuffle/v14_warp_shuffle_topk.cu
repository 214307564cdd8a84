// v14: brute-force top-k, one thread per query (or two), references passed between the lanes of
// a warp with __shfl_sync (seed 002's "closest cities" kernel, rewritten). Blocks of 128 threads;
// each thread keeps, per query, its running best topk (distance, index) pairs as a max-heap in
// shared memory (slot-major, kernels/device/shared_topk.cuh: an entering pair costs a sift-down
// of log2(topk) levels, not a shift of topk / 2 slots). The references stream in tiles of 32: each
// lane loads one row, then the warp hands every row to every lane, so a row is read from memory
// once per warp. A variant with 2 queries per thread (each shuffled coordinate serves both) is
// measured slower on an H100 and runs only when v14.queries_per_thread=2 asks for it. Any k (1, 2, 3, 4, 8 compiled in, others at run time), any n (the
// last tile is guarded: nothing is read past row n - 1), any topk the device's shared memory holds
// (larger ones are skipped with the numbers), self-joins (the query's own row is masked in the one
// tile that holds it). Distances use v0's float roundings (no FMA), so they equal v0's bit for bit.
#include <cuda_runtime.h>

#include <climits>
#include <cstdlib>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/cuda/runtime.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "kernels/device/exact_distance.cuh"
#include "kernels/device/shared_topk.cuh"
#include "kernels/device/topk_supports.hpp"
#include "kernels/warpshuffle/v14_params.hpp"

namespace {

namespace cuda = knn::cuda;

constexpr int kBlock = 128;  // threads (= queries) per block
constexpr int kTile = 32;    // references per tile: one per lane
constexpr unsigned kFullWarp = 0xffffffffu;
// Resident blocks per SM the register budget is sized for (halved with 2 queries per thread): at
// topk = 32 a block's lists take 32 KiB per query slot, so an H100 (228 KiB per SM) holds 6 blocks
// (3 with two lists each); registers must not be the tighter limit.
constexpr int kMinBlocksPerSm = 6;

// Shared memory of one block: per query slot (QPT per thread) and thread, topk distances and
// topk indices.
std::size_t list_bytes(int topk, int qpt) {
  return std::size_t(qpt) * std::size_t(topk) * kBlock * (sizeof(float) + sizeof(std::int32_t));
}

// Reference row `row` into registers (zeros past the last row: never read out of bounds).
template <int DIM>
__device__ __forceinline__ void load_row(const float* __restrict__ references, unsigned n, unsigned row,
                                         float (&v)[DIM]) {
  if (row >= n) {
#pragma unroll
    for (int t = 0; t < DIM; ++t) v[t] = 0.f;
    return;
  }
  const float* p = references + std::size_t(row) * DIM;
  if constexpr (DIM % 4 == 0) {
#pragma unroll
    for (int c = 0; c < DIM / 4; ++c) {
      const float4 f = __ldg(reinterpret_cast<const float4*>(p) + c);
      v[4 * c] = f.x, v[4 * c + 1] = f.y, v[4 * c + 2] = f.z, v[4 * c + 3] = f.w;
    }
  } else if constexpr (DIM % 2 == 0) {
#pragma unroll
    for (int c = 0; c < DIM / 2; ++c) {
      const float2 f = __ldg(reinterpret_cast<const float2*>(p) + c);
      v[2 * c] = f.x, v[2 * c + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int t = 0; t < DIM; ++t) v[t] = __ldg(p + t);
  }
}

// First term of a squared distance: 0 + s == s for every square s (never -0), so v0's
// "sum = 0; sum += diff * diff" needs no add here.
__device__ __forceinline__ float first_square(float q, float r) {
  const float diff = __fsub_rn(q, r);
  return __fmul_rn(diff, diff);
}

// Squared distances from this lane's QPT queries to the tile's 32 rows, sums[u][j] for query u
// and row base + j. DIM > 0: the queries and the lane's row are in registers (`row`); each
// shuffled coordinate serves all QPT queries. The shuffles take every lane.
template <int DIM, int QPT>
__device__ __forceinline__ void tile_distances(const float (&query)[QPT][DIM], const float (&row)[DIM],
                                               float (&sums)[QPT][kTile]) {
#pragma unroll
  for (int j = 0; j < kTile; ++j) {
    float r[DIM];
#pragma unroll
    for (int t = 0; t < DIM; ++t) r[t] = __shfl_sync(kFullWarp, row[t], j);
#pragma unroll
    for (int u = 0; u < QPT; ++u) {
      float s = first_square(query[u][0], r[0]);
#pragma unroll
      for (int t = 1; t < DIM; ++t) s = knn::gpu::exact::add_square(s, query[u][t], r[t]);
      sums[u][j] = s;
    }
  }
}

// The same for k (>= 1) known at run time: coordinate t of the lane's row is loaded and handed
// round, and the 32 sums grow one dimension at a time (each sum still adds in dimension order).
template <int QPT>
__device__ __forceinline__ void tile_distances_dynamic(const float* const (&query)[QPT],
                                                       const float* __restrict__ references, int dim, unsigned n,
                                                       unsigned row, float (&sums)[QPT][kTile]) {
  const bool valid = row < n;
  const float* p = references + std::size_t(valid ? row : 0) * dim;
  {
    float q[QPT];
    for (int u = 0; u < QPT; ++u) q[u] = __ldg(query[u]);  // fully unrolled: QPT is a constant
    const float r = valid ? __ldg(p) : 0.f;
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
      const float rj = __shfl_sync(kFullWarp, r, j);
#pragma unroll
      for (int u = 0; u < QPT; ++u) sums[u][j] = first_square(q[u], rj);
    }
  }
  for (int t = 1; t < dim; ++t) {
    float q[QPT];
    for (int u = 0; u < QPT; ++u) q[u] = __ldg(query[u] + t);
    const float r = valid ? __ldg(p + t) : 0.f;
#pragma unroll
    for (int j = 0; j < kTile; ++j) {
      const float rj = __shfl_sync(kFullWarp, r, j);
#pragma unroll
      for (int u = 0; u < QPT; ++u) sums[u][j] = knn::gpu::exact::add_square(sums[u][j], q[u], rj);
    }
  }
}

// Offers one query's 32 distances of the tile starting at row `base`. The minimum is taken as a
// tree over four groups of 8; nearly every tile stops at the first compare. Otherwise only the
// groups whose minimum still beats the worst kept distance are offered one by one (late in the
// scan a tile usually holds a single entering row, so 8 offers run instead of 32).
__device__ __forceinline__ void offer_tile(knn::gpu::SharedTopK& list, const float (&sums)[kTile], unsigned base) {
  constexpr int kGroup = 8;
  float group_min[kTile / kGroup];
#pragma unroll
  for (int g = 0; g < kTile / kGroup; ++g) {
    const float* s = sums + g * kGroup;
    group_min[g] = fminf(fminf(fminf(s[0], s[1]), fminf(s[2], s[3])), fminf(fminf(s[4], s[5]), fminf(s[6], s[7])));
  }
  const float best = fminf(fminf(group_min[0], group_min[1]), fminf(group_min[2], group_min[3]));
  if (!(best < list.worst_distance())) return;
#pragma unroll
  for (int g = 0; g < kTile / kGroup; ++g) {
    if (!(group_min[g] < list.worst_distance())) continue;  // the worst only falls: nothing here enters
#pragma unroll
    for (int j = g * kGroup; j < (g + 1) * kGroup; ++j) list.offer_ascending(sums[j], std::int32_t(base) + j);
  }
}

// One block: 128 × QPT consecutive queries, four independent warps (no block-wide
// synchronisation), 128 × QPT × topk list slots in dynamic shared memory. Thread t holds queries
// blockIdx.x·128·QPT + u·128 + t (u < QPT); it scans every reference in tiles of 32 (the warp's
// lanes load a tile's rows, next tile prefetched when k is compiled in), takes the distances by
// shuffles, and offers the rows that beat a list's cached worst distance to it, in increasing index
// order. A query slot past the last query keeps a closed list and a copy of query m - 1, so the
// warp's shuffles stay whole; a warp with no query at all leaves at once. Finally each thread
// writes its sorted rows.
template <int DIM, int QPT>
__global__ void __launch_bounds__(kBlock, kMinBlocksPerSm / QPT)
    warp_shuffle_topk_kernel(const float* __restrict__ queries, const float* __restrict__ references, int dim, int m,
                             int n, int topk, bool self_join, std::int32_t* __restrict__ out_indices,
                             float* __restrict__ out_distances) {
  extern __shared__ float lists[];  // per query slot u: topk·kBlock distances, then topk·kBlock indices
  const int lane = threadIdx.x & (kTile - 1);
  const std::int64_t block_first = std::int64_t(blockIdx.x) * kBlock * QPT;
  const int warp_offset = threadIdx.x & ~(kTile - 1);
  if (block_first + warp_offset >= m) return;  // the whole warp: every lane sees the same value

  const unsigned rows = unsigned(n);
  knn::gpu::SharedTopK list[QPT];
  bool active[QPT];
  int q[QPT];
  unsigned self_tile[QPT];
  const float* query_row[QPT];
#pragma unroll
  for (int u = 0; u < QPT; ++u) {
    const std::int64_t warp_first = block_first + u * kBlock + warp_offset;
    active[u] = warp_first + lane < m;
    q[u] = int(active[u] ? warp_first + lane : m - 1);
    // In a self-join the warp's queries u are rows warp_first .. warp_first + 31 of the
    // references, i.e. exactly the tile starting there (both multiples of 32), at this lane's
    // position; a warp_first >= n matches no tile.
    self_tile[u] = self_join && warp_first < m ? unsigned(warp_first) : UINT_MAX;
    query_row[u] = queries + std::size_t(q[u]) * dim;
    float* slots = lists + std::size_t(u) * 2 * topk * kBlock;
    list[u] = knn::gpu::SharedTopK(slots + threadIdx.x,
                                   reinterpret_cast<std::int32_t*>(slots + std::size_t(topk) * kBlock) + threadIdx.x,
                                   kBlock, topk);
    if (active[u])
      list[u].clear();
    else
      list[u].close();
  }

  float query[QPT][DIM > 0 ? DIM : 1];
  float row[DIM > 0 ? DIM : 1];
  if constexpr (DIM > 0) {
#pragma unroll
    for (int u = 0; u < QPT; ++u)
#pragma unroll
      for (int t = 0; t < DIM; ++t) query[u][t] = __ldg(query_row[u] + t);
    load_row<DIM>(references, rows, unsigned(lane), row);
  }

  // base < n <= INT_MAX, so base + 32 + lane never wraps an unsigned.
  for (unsigned base = 0; base < rows; base += kTile) {
    float sums[QPT][kTile];
    if constexpr (DIM > 0) {
      float next[DIM];
      load_row<DIM>(references, rows, base + kTile + lane, next);
      tile_distances<DIM, QPT>(query, row, sums);
#pragma unroll
      for (int t = 0; t < DIM; ++t) row[t] = next[t];
    } else {
      tile_distances_dynamic<QPT>(query_row, references, dim, rows, base + lane, sums);
    }
    // Rows past n (last tile) and the query itself (self tile) are no candidates.
    const unsigned left = rows - base;
    const unsigned tail = left < kTile ? (kFullWarp << left) : 0u;
#pragma unroll
    for (int u = 0; u < QPT; ++u) {
      const unsigned excluded = tail | (base == self_tile[u] ? 1u << lane : 0u);
      if (excluded) {
#pragma unroll
        for (int j = 0; j < kTile; ++j)
          if ((excluded >> j) & 1u) sums[u][j] = INFINITY;
      }
      offer_tile(list[u], sums[u], base);
    }
  }
#pragma unroll
  for (int u = 0; u < QPT; ++u)
    if (active[u]) list[u].store(out_indices + std::size_t(q[u]) * topk, out_distances + std::size_t(q[u]) * topk);
}

template <int DIM, int QPT>
void launch(const knn::Problem& p, const float* queries, const float* references, std::int32_t* indices,
            float* distances, cudaStream_t stream) {
  const std::size_t shared = list_bytes(p.topk, QPT);
  const auto kernel = warp_shuffle_topk_kernel<DIM, QPT>;
  KNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  KNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  const int grid = cuda::divup(p.m, kBlock * QPT);
  kernel<<<grid, kBlock, shared, stream>>>(queries, references, p.dim, p.m, p.n, p.topk, p.self_join, indices, distances);
  KNN_CUDA_CHECK_LAUNCH();
}

// The dimensions compiled in; others take the run-time loop.
bool compiled_dim(int dim) { return dim == 1 || dim == 2 || dim == 3 || dim == 4 || dim == 8; }

template <int QPT>
void dispatch(const knn::Problem& p, const float* queries, const float* references, std::int32_t* indices,
              float* distances, cudaStream_t stream) {
  switch (p.dim) {
    case 1: return launch<1, QPT>(p, queries, references, indices, distances, stream);
    case 2: return launch<2, QPT>(p, queries, references, indices, distances, stream);
    case 3: return launch<3, QPT>(p, queries, references, indices, distances, stream);
    case 4: return launch<4, QPT>(p, queries, references, indices, distances, stream);
    case 8: return launch<8, QPT>(p, queries, references, indices, distances, stream);
    default: return launch<0, QPT>(p, queries, references, indices, distances, stream);
  }
}

std::optional<std::string> topk_over_limit(int topk, std::size_t limit) {
  const std::size_t need = list_bytes(topk, 1);
  if (need <= limit) return std::nullopt;
  return fmt::format(
      "topk {} needs {} bytes of shared memory per block ({} threads x {} slots x 8 bytes); the device allows {} "
      "bytes per block (topk <= {})",
      topk, need, kBlock, topk, limit, limit / list_bytes(1, 1));
}

// Queries per thread: 1. Two per thread halve the shuffles per pair, but measured on an H100
// (case 200, n = 200064 2-D points, self-join, topk 32) the kernel took 51.4 ms against 21.6 ms
// with one: the doubled lists (64 KiB per block) and 105 registers leave 12 warps per SM, too few
// to hide the shared-memory heaps' latency. The variant stays, tested, for other GPUs and tuning
// (v14.queries_per_thread=2); `why` says so in the result's path.
int choose_queries_per_thread(const knn::Problem& /*p*/, int /*sm_count*/, std::size_t /*optin*/, std::string& why) {
  why = "2 per thread measured 2.4x slower on an H100";
  return 1;
}

// The parameter queries_per_thread when it is 1 or 2, nullopt for auto.
std::optional<int> queries_per_thread_override(const knn::ParamValues& params) {
  if (params.text("queries_per_thread") == "auto") return std::nullopt;
  return int(params.integer("queries_per_thread"));
}

// A forced 2 whose lists do not fit the device's shared memory per block (`optin`).
std::optional<std::string> forced_over_limit(const knn::Problem& p, const knn::ParamValues& params, std::size_t optin) {
  const std::optional<int> forced = queries_per_thread_override(params);
  if (!forced || list_bytes(p.topk, *forced) <= optin) return std::nullopt;
  return fmt::format("queries_per_thread={}: {} lists of {} need {} bytes of shared memory per block, the device allows {}",
                     *forced, *forced, p.topk, list_bytes(p.topk, *forced), optin);
}

void v14_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  if (ctx.env.devices.empty()) throw std::runtime_error("v14: no CUDA device selected");
  if (p.self_join && p.m != p.n)
    throw std::invalid_argument(fmt::format("v14: a self-join needs m == n (m = {}, n = {})", p.m, p.n));
  const std::optional<int> forced = queries_per_thread_override(ctx.env.params);
  const int device = ctx.env.devices[0].ordinal;
  ctx.devices_used = {device};
  cuda::DeviceScope scope(device);
  int optin = 0, sm_count = 0;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  if (const auto reason = topk_over_limit(p.topk, std::size_t(optin))) throw std::invalid_argument("v14: " + *reason);
  std::string why;
  int qpt = choose_queries_per_thread(p, sm_count, std::size_t(optin), why);
  if (const auto reason = forced_over_limit(p, ctx.env.params, std::size_t(optin))) throw std::invalid_argument("v14: " + *reason);
  if (forced) {
    why = fmt::format("set by queries_per_thread={}, the automatic choice is {}", *forced, qpt);
    qpt = *forced;
  } else {
    ctx.chosen["queries_per_thread"] = std::to_string(qpt);
  }

  cuda::Stream stream;  // declared first: the buffers below are freed on it before it goes back
  // A self-join's queries are its references: uploaded once.
  cuda::StreamBuffer<float> references(p.reference_floats(), stream);
  cuda::StreamBuffer<float> own_queries(p.self_join ? 0 : p.query_floats(), stream);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), stream);
  cuda::StreamBuffer<float> distances(p.result_slots(), stream);
  const float* queries = p.self_join ? references.data() : own_queries.data();

  cuda::PhaseTimer timer(stream);
  timer.begin("h2d");
  if (p.reference_floats() > 0)
    KNN_CUDA_TRY(cudaMemcpyAsync(references.data(), p.references, p.reference_floats() * sizeof(float),
                                 cudaMemcpyHostToDevice, stream));
  if (!p.self_join && p.query_floats() > 0)
    KNN_CUDA_TRY(cudaMemcpyAsync(own_queries.data(), p.queries, p.query_floats() * sizeof(float),
                                 cudaMemcpyHostToDevice, stream));
  timer.end();
  timer.begin("kernel");
  if (p.m > 0) (qpt == 2 ? dispatch<2> : dispatch<1>)(p, queries, references.data(), indices.data(), distances.data(), stream);
  timer.end();
  // Straight into the harness's buffers (pinned when the run uses pinned host memory).
  cuda::finish_with_answers(timer, p, indices.data(), distances.data(), out, stream, ctx.timing);
  ctx.path = fmt::format(
      "{}, {} quer{} per thread ({}), {} threads per block, heap lists of {} in {} bytes of shared memory per block",
      compiled_dim(p.dim) ? fmt::format("k={} compiled in", p.dim) : std::string("k at run time"), qpt,
      qpt == 1 ? "y" : "ies", why, kBlock, p.topk, list_bytes(p.topk, qpt));
}

std::size_t v14_device_bytes(const knn::Problem& p, const knn::Environment&) {
  const std::size_t floats = p.reference_floats() + (p.self_join ? 0 : p.query_floats());
  return floats * sizeof(float) + p.result_slots() * (sizeof(std::int32_t) + sizeof(float));
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v14";
  d.title = "GPU top-k, one thread per query, warp-shuffled reference tiles, sorted lists in shared memory";
  d.family = knn::Family::gpu;
  d.gpus = knn::GpuNeed::one;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (auto reason = knn::gpu::topk_supports(p, env)) return reason;
    if (auto reason = topk_over_limit(p.topk, env.devices[0].shared_per_block_optin)) return reason;
    return forced_over_limit(p, env.params, env.devices[0].shared_per_block_optin);
  };
  d.device_bytes = v14_device_bytes;
  d.make = knn::query_only(v14_query);
  d.params = knn::gpu::v14_params();
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
