// v14: brute-force top-k, one thread per query, references passed between the lanes of a warp
// with __shfl_sync (seed 002's "closest cities" kernel, rewritten). Blocks of 128 threads; each
// thread keeps its running best topk (distance, index) pairs sorted in shared memory (slot-major,
// kernels/common/shared_topk.cuh). The references stream in tiles of 32: each lane loads one row,
// then the warp hands every row to every lane, so a row is read from memory once per warp. Any k
// (k = 1, 2, 3, 4, 8 compiled in, others at run time), any n (the last tile is guarded: nothing is
// read past row n - 1), any topk the device's shared memory holds (larger ones are skipped with
// the numbers), self-joins (the query's own row is masked in the one tile that holds it).
// Distances use v0's float roundings (no FMA contraction), so they equal v0's bit for bit.
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "core/cuda/runtime.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "kernels/common/shared_topk.cuh"
#include "kernels/common/tree_gpu.cuh"

namespace {

namespace cuda = knn::cuda;

constexpr int kBlock = 128;  // threads (= queries) per block
constexpr int kTile = 32;    // references per tile: one per lane
constexpr unsigned kFullWarp = 0xffffffffu;
// Resident blocks per SM the register budget is sized for: at topk = 32 a block's lists take
// 32 KiB, so an H100 (228 KiB per SM) holds 6 blocks; registers must not be the tighter limit.
constexpr int kMinBlocksPerSm = 6;

// Shared memory of one block: per thread topk distances and topk indices.
std::size_t list_bytes(int topk) {
  return std::size_t(topk) * kBlock * (sizeof(float) + sizeof(std::int32_t));
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

// Squared distances from this lane's query to the tile's 32 rows, sums[j] for row base + j.
// DIM > 0: the query and the lane's row are in registers (`row`). The shuffles take every lane.
template <int DIM>
__device__ __forceinline__ void tile_distances(const float (&query)[DIM], const float (&row)[DIM], float (&sums)[kTile]) {
#pragma unroll
  for (int j = 0; j < kTile; ++j) {
    float s = first_square(query[0], __shfl_sync(kFullWarp, row[0], j));
#pragma unroll
    for (int t = 1; t < DIM; ++t) s = knn::tree::gpu::add_square(s, query[t], __shfl_sync(kFullWarp, row[t], j));
    sums[j] = s;
  }
}

// The same for k (>= 1) known at run time: coordinate t of the lane's row is loaded and handed
// round, and the 32 sums grow one dimension at a time (each sum still adds in dimension order).
__device__ __forceinline__ void tile_distances_dynamic(const float* __restrict__ query,
                                                       const float* __restrict__ references, int dim, unsigned n,
                                                       unsigned row, float (&sums)[kTile]) {
  const bool valid = row < n;
  const float* p = references + std::size_t(valid ? row : 0) * dim;
  {
    const float q = __ldg(query), r = valid ? __ldg(p) : 0.f;
#pragma unroll
    for (int j = 0; j < kTile; ++j) sums[j] = first_square(q, __shfl_sync(kFullWarp, r, j));
  }
  for (int t = 1; t < dim; ++t) {
    const float q = __ldg(query + t), r = valid ? __ldg(p + t) : 0.f;
#pragma unroll
    for (int j = 0; j < kTile; ++j) sums[j] = knn::tree::gpu::add_square(sums[j], q, __shfl_sync(kFullWarp, r, j));
  }
}

// One block: 128 consecutive queries, four independent warps (no block-wide synchronisation),
// 128 × topk list slots in dynamic shared memory. One thread: query blockIdx.x·128 + threadIdx.x;
// it scans every reference in tiles of 32 (the warp's lanes load a tile's rows, next tile
// prefetched when k is compiled in), takes the 32 distances by shuffles, and offers the rows that
// beat its cached worst distance to its list, in increasing index order. A lane past the last
// query keeps a closed list and a copy of query m - 1, so the warp's shuffles stay whole; a warp
// with no query at all leaves at once. Finally each thread writes its sorted row.
template <int DIM>
__global__ void __launch_bounds__(kBlock, kMinBlocksPerSm)
    warp_shuffle_topk_kernel(const float* __restrict__ queries, const float* __restrict__ references, int dim, int m,
                             int n, int topk, bool self_join, std::int32_t* __restrict__ out_indices,
                             float* __restrict__ out_distances) {
  extern __shared__ float lists[];  // topk·kBlock distances, then topk·kBlock indices
  const int lane = threadIdx.x & (kTile - 1);
  const std::int64_t warp_first = std::int64_t(blockIdx.x) * kBlock + (threadIdx.x & ~(kTile - 1));
  if (warp_first >= m) return;  // the whole warp: every lane sees the same value
  const std::int64_t q64 = warp_first + lane;
  const bool active = q64 < m;
  const int q = int(active ? q64 : m - 1);

  knn::gpu::SharedTopK list(lists + threadIdx.x, reinterpret_cast<std::int32_t*>(lists + std::size_t(topk) * kBlock) + threadIdx.x,
                            kBlock, topk);
  if (active)
    list.clear();
  else
    list.close();

  const unsigned rows = unsigned(n);
  // In a self-join the warp's queries are rows warp_first .. warp_first + 31 of the references,
  // i.e. exactly the tile starting there (both are multiples of 32), at this lane's position.
  const unsigned self_tile = self_join ? unsigned(warp_first) : UINT_MAX;
  const float* query_row = queries + std::size_t(q) * dim;

  float query[DIM > 0 ? DIM : 1];
  float row[DIM > 0 ? DIM : 1];
  if constexpr (DIM > 0) {
#pragma unroll
    for (int t = 0; t < DIM; ++t) query[t] = __ldg(query_row + t);
    load_row<DIM>(references, rows, unsigned(lane), row);
  }

  // base < n <= INT_MAX, so base + 32 + lane never wraps an unsigned.
  for (unsigned base = 0; base < rows; base += kTile) {
    float sums[kTile];
    if constexpr (DIM > 0) {
      float next[DIM];
      load_row<DIM>(references, rows, base + kTile + lane, next);
      tile_distances<DIM>(query, row, sums);
#pragma unroll
      for (int t = 0; t < DIM; ++t) row[t] = next[t];
    } else {
      tile_distances_dynamic(query_row, references, dim, rows, base + lane, sums);
    }
    // Rows past n (last tile) and the query itself (self tile) are no candidates.
    const unsigned left = rows - base;
    unsigned excluded = left < kTile ? (kFullWarp << left) : 0u;
    if (base == self_tile) excluded |= 1u << lane;
    if (excluded) {
#pragma unroll
      for (int j = 0; j < kTile; ++j)
        if ((excluded >> j) & 1u) sums[j] = INFINITY;
    }
    // Nearly every tile ends here: no row beats the worst kept distance.
    float best = sums[0];
#pragma unroll
    for (int j = 1; j < kTile; ++j) best = fminf(best, sums[j]);
    if (best < list.worst_distance()) {
#pragma unroll
      for (int j = 0; j < kTile; ++j) list.offer_ascending(sums[j], std::int32_t(base) + j);
    }
  }
  if (active) list.store(out_indices + std::size_t(q) * topk, out_distances + std::size_t(q) * topk);
}

template <int DIM>
void launch(const knn::Problem& p, const float* queries, const float* references, std::int32_t* indices,
            float* distances, cudaStream_t stream) {
  const std::size_t shared = list_bytes(p.topk);
  const auto kernel = warp_shuffle_topk_kernel<DIM>;
  KNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  KNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  const int grid = cuda::divup(p.m, kBlock);
  kernel<<<grid, kBlock, shared, stream>>>(queries, references, p.dim, p.m, p.n, p.topk, p.self_join, indices, distances);
  KNN_CUDA_CHECK_LAUNCH();
}

// The dimensions compiled in; others take the run-time loop.
bool compiled_dim(int dim) { return dim == 1 || dim == 2 || dim == 3 || dim == 4 || dim == 8; }

void dispatch(const knn::Problem& p, const float* queries, const float* references, std::int32_t* indices,
              float* distances, cudaStream_t stream) {
  switch (p.dim) {
    case 1: return launch<1>(p, queries, references, indices, distances, stream);
    case 2: return launch<2>(p, queries, references, indices, distances, stream);
    case 3: return launch<3>(p, queries, references, indices, distances, stream);
    case 4: return launch<4>(p, queries, references, indices, distances, stream);
    case 8: return launch<8>(p, queries, references, indices, distances, stream);
    default: return launch<0>(p, queries, references, indices, distances, stream);
  }
}

std::optional<std::string> topk_over_limit(int topk, std::size_t limit) {
  const std::size_t need = list_bytes(topk);
  if (need <= limit) return std::nullopt;
  return fmt::format(
      "topk {} needs {} bytes of shared memory per block ({} threads x {} slots x 8 bytes); the device allows {} "
      "bytes per block (topk <= {})",
      topk, need, kBlock, topk, limit, limit / list_bytes(1));
}

void v14_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  if (ctx.env.devices.empty()) throw std::runtime_error("v14: no CUDA device selected");
  if (p.self_join && p.m != p.n)
    throw std::invalid_argument(fmt::format("v14: a self-join needs m == n (m = {}, n = {})", p.m, p.n));
  const int device = ctx.env.devices[0].ordinal;
  ctx.devices_used = {device};
  cuda::DeviceScope scope(device);
  int optin = 0;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (const auto reason = topk_over_limit(p.topk, std::size_t(optin))) throw std::invalid_argument("v14: " + *reason);

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
  if (p.m > 0) dispatch(p, queries, references.data(), indices.data(), distances.data(), stream);
  timer.end();
  // Straight into the harness's buffers (pinned when the run uses pinned host memory).
  timer.begin("d2h");
  if (p.result_slots() > 0) {
    KNN_CUDA_TRY(cudaMemcpyAsync(out.indices, indices.data(), p.result_slots() * sizeof(std::int32_t),
                                 cudaMemcpyDeviceToHost, stream));
    KNN_CUDA_TRY(cudaMemcpyAsync(out.distances, distances.data(), p.result_slots() * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream));
  }
  timer.end();
  stream.synchronize();
  timer.report(ctx.timing);
  ctx.path = fmt::format("{}, {} threads per block, lists of {} in {} bytes of shared memory per block",
                         compiled_dim(p.dim) ? fmt::format("k={} compiled in", p.dim) : std::string("k at run time"),
                         kBlock, p.topk, list_bytes(p.topk));
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
    if (env.devices.empty()) return std::string("no CUDA device");
    if (p.dim < 1) return fmt::format("k = {}: needs at least one dimension", p.dim);
    if (p.topk < 1) return fmt::format("topk {} is not a neighbour count", p.topk);
    if (p.self_join && p.m != p.n) return fmt::format("a self-join needs m == n (m = {}, n = {})", p.m, p.n);
    return topk_over_limit(p.topk, env.devices[0].shared_per_block_optin);
  };
  d.device_bytes = v14_device_bytes;
  d.make = knn::query_only(v14_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
