#pragma once
// v15's fp32 filter on CUDA cores (the rule and the bound: kernels/bruteforce/detail/filters/tc_filter.hpp),
// for the nearest neighbour of float data with k below the tensor-core filter's range.
//
// The fused scan's layout (kernels/bruteforce/detail/scan/fused_scan.cuh): blocks of kScanBlock threads = QT
// query threads × RT row threads, blockIdx.x = query group × splits + split; a thread holds Q queries
// (kFp32Queries, or 4) and reads its split's rows 4 at a time (k 16-byte loads, the next group's
// issued before the current one is scored). It keeps, per query, w = −2 (q − c) in registers, and
// per row computes x = r − c and ‖x‖² once for all its queries; a pair's score ‖x‖² + w·x is then
// k fused multiply-adds and one comparison with the query's threshold, which only sets the
// query's flag: no branch among a group's 4·Q pairs. When a query is flagged (rare once the
// thresholds are tight), each of the group's rows gets the scan's own distance
// (tc::exact_distance; row and query read again through the cache, since keeping them in
// registers for a rare branch would cost occupancy), and the query's best exact pair and threshold
// follow; an improvement is published at once by atomicMin on the query's key. The tensor-core
// filter's argument (kernels/bruteforce/detail/filters/tc_filter.cuh) shows that no row that could be the
// scan's answer, or tie with it, is passed over: examining more rows than the flagged ones only costs
// time. Every kRefresh groups a thread reads its queries' keys (what every thread has published,
// seeded by tc::seed_kernel), so thresholds tighten across blocks.
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "kernels/bruteforce/detail/scan/fused_scan.cuh"
#include "kernels/bruteforce/detail/filters/tc_filter.cuh"
#include "kernels/bruteforce/detail/filters/tc_filter.hpp"

namespace knn::gpu::f32 {

// Row groups between two reads of a thread's query keys.
constexpr int kRefresh = 32;

// A thread's Q query slots: slot u is first_query + u·QT; slots past m take no candidates
// (threshold −inf) and read query m − 1. Per slot: w = −2 (q − c), the best exact pair known and
// the score threshold that follows from it.
template <int DIM, int Q>
struct Slots {
  float w[Q][DIM];
  float best[Q], threshold[Q];
  std::int32_t index[Q];
  int first_query;

  __device__ __forceinline__ int query_of(const scan::Args& a, int u) const {
    return min(first_query + u * a.query_threads, a.m - 1);
  }
  __device__ __forceinline__ void load(const scan::Args& a, int first) {
    first_query = first;
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      const bool active = first_query + u * a.query_threads < a.m;
      const float* row = a.queries + std::size_t(query_of(a, u)) * DIM;
#pragma unroll
      for (int t = 0; t < DIM; ++t) w[u][t] = -2.f * (__ldg(row + t) - a.tc_center);
      best[u] = INFINITY, index[u] = -1;
      threshold[u] = active ? INFINITY : -INFINITY;  // -inf: a slot past m never takes a candidate
    }
  }
  // Takes each query's key when it beats what the thread knows.
  __device__ __forceinline__ void refresh(const scan::Args& a) {
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      if (threshold[u] == -INFINITY) continue;
      const unsigned long long key = __ldcg(a.best + query_of(a, u));
      if (key < scan::pack(best[u], index[u])) {
        best[u] = __uint_as_float(unsigned(key >> 32)), index[u] = std::int32_t(unsigned(key));
        threshold[u] = tc::threshold_for(best[u], tc::norm_low(a.queries + std::size_t(query_of(a, u)) * DIM, DIM, a.tc_center),
                                         a.tc_band);
      }
    }
  }
  // Which slots some row of the group (centred rows x, norms ‖x‖²) scores at or below its threshold.
  __device__ __forceinline__ unsigned flag(const float (&x)[kScanGroup][DIM], const float (&norm)[kScanGroup]) const {
    return tc::flag_scores(w, x, norm, threshold);
  }
  // Rare once the thresholds are tight: every row of a flagged slot's group (rows row0 .. row0 +
  // valid − 1 of the chunk) gets the scan's own distance, read again through the cache (keeping
  // rows and queries in registers for a rare branch would cost occupancy); an improvement is
  // published at once by atomicMin on the query's key, for other threads' refreshes.
  __device__ __forceinline__ void examine(const scan::Args& a, unsigned flagged, int row0, int valid, unsigned& candidates) {
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      if (!(flagged & (1u << u))) continue;
      const int qu = first_query + u * a.query_threads;
      const float* qrow = a.queries + std::size_t(qu) * DIM;
#pragma unroll
      for (int j = 0; j < kScanGroup; ++j) {
        const int row = row0 + j;
        if (j >= valid || (a.self_join && row == qu)) continue;
        ++candidates;
        const float e = tc::exact_distance<DIM>(qrow, a.references + std::size_t(row) * DIM);
        if (e < best[u] || (e == best[u] && row < index[u])) {
          best[u] = e, index[u] = row;
          threshold[u] = tc::threshold_for(e, tc::norm_low(qrow, DIM, a.tc_center), a.tc_band);
          atomicMin(a.best + qu, scan::pack(e, row));
        }
      }
    }
  }
};

// The warp's count of exact distances, added to the total (kScanBlock is a multiple of 32 and
// no thread has left, so the whole warp sums).
__device__ __forceinline__ void count_candidates(const scan::Args& a, unsigned candidates) {
  candidates = warp::sum(candidates);
  if ((threadIdx.x & 31) == 0 && candidates > 0) atomicAdd(a.tc_candidates, (unsigned long long)candidates);
}

template <int DIM, int Q>
__global__ void __launch_bounds__(kScanBlock, Q == 8 ? (DIM <= 3 ? 3 : 2) : (DIM <= 3 ? 5 : 4)) filter_kernel(scan::Args a) {
  constexpr int G = kScanGroup;
  const int qt = threadIdx.x % a.query_threads, rt = threadIdx.x / a.query_threads;
  const int group = blockIdx.x / a.splits, split = blockIdx.x % a.splits;
  // A thread whose first slot is past m has no query and only takes part in the warp's sums.
  Slots<DIM, Q> s;
  s.load(a, group * Q * a.query_threads + qt);
  const bool any_query = s.first_query < a.m;
  const float c = a.tc_center;
  s.refresh(a);

  const long long groups = (a.row_end - a.row_begin + G - 1) / G;
  const long long g_end = groups * (split + 1) / a.splits;
  long long g = any_query ? groups * split / a.splits + rt : g_end;
  unsigned candidates = 0;
  float next[G * DIM];
  const auto load = [&](long long at, float(&r)[G * DIM]) {
    const float4* p = reinterpret_cast<const float4*>(a.references + (std::size_t(a.row_begin) + std::size_t(at) * G) * DIM);
#pragma unroll
    for (int i = 0; i < DIM; ++i) {
      const float4 f = __ldg(p + i);
      r[4 * i] = f.x, r[4 * i + 1] = f.y, r[4 * i + 2] = f.z, r[4 * i + 3] = f.w;
    }
  };
  if (g < g_end) load(g, next);
  int since = 0;
#pragma unroll 1
  for (; g < g_end; g += a.ref_threads) {
    float x[G][DIM], norm[G];
#pragma unroll
    for (int j = 0; j < G; ++j)
#pragma unroll
      for (int t = 0; t < DIM; ++t) x[j][t] = next[j * DIM + t] - c;
    if (g + a.ref_threads < g_end) load(g + a.ref_threads, next);
    const int row0 = a.row_begin + int(g) * G;
#pragma unroll
    for (int j = 0; j < G; ++j) {
      norm[j] = __fmul_rn(x[j][0], x[j][0]);
#pragma unroll
      for (int t = 1; t < DIM; ++t) norm[j] = __fmaf_rn(x[j][t], x[j][t], norm[j]);
    }
    const int valid = a.row_end - row0;  // rows past the chunk (padding) are no candidates
    if (valid < G) {
#pragma unroll
      for (int j = 0; j < G; ++j) norm[j] = j < valid ? norm[j] : INFINITY;
    }
    const unsigned flagged = s.flag(x, norm);
    if (flagged != 0) s.examine(a, flagged, row0, valid, candidates);
    if (++since == kRefresh) since = 0, s.refresh(a);
  }
  count_candidates(a, candidates);
}

// The same filter with the rows staged in shared memory (v15.fp32_stage; auto from
// kFp32StageMinSlots query slots, tc_filter.hpp): a
// tile of kScanBlock rows, one per thread, is read from global memory (the next tile's row while
// the current tile is scored), centred, and written with its norm as kStageStride floats; every
// thread then scores its groups of the tile from there. The centring and the norm, which the
// kernel above repeats in every thread for every row, are done once per row for the whole block,
// with the same operations in the same order (so the same scores, and the same bound), and a
// group's rows come from shared memory instead of a global load one group ahead.
template <int DIM>
constexpr int kStageStride = (DIM + 1 + 3) / 4 * 4;  // x[0..DIM-1], ‖x‖², padding to 16 bytes

template <int DIM, int Q>
__global__ void __launch_bounds__(kScanBlock, Q == 8 ? 4 : 5) staged_kernel(scan::Args a) {
  constexpr int G = kScanGroup, S = kStageStride<DIM>, kTileGroups = kScanBlock / G;
  __shared__ float4 tile[kScanBlock * S / 4];
  const int qt = threadIdx.x % a.query_threads, rt = threadIdx.x / a.query_threads;
  const int group = blockIdx.x / a.splits, split = blockIdx.x % a.splits;
  Slots<DIM, Q> s;
  s.load(a, group * Q * a.query_threads + qt);
  const bool any_query = s.first_query < a.m;
  const float c = a.tc_center;

  // The block's groups (the same for all its threads: every thread reaches every barrier).
  const long long groups = (a.row_end - a.row_begin + G - 1) / G;
  const long long g_begin = groups * split / a.splits, g_end = groups * (split + 1) / a.splits;
  const long long row_limit = min((long long)a.row_end, a.row_begin + g_end * G);
  float next[DIM];
  const auto load = [&](long long tile_group) {
    const long long row = a.row_begin + tile_group * G + threadIdx.x;
    if (row < row_limit) {
#pragma unroll
      for (int t = 0; t < DIM; ++t) next[t] = __ldg(a.references + std::size_t(row) * DIM + t);
    }
  };
  if (g_begin < g_end) load(g_begin);
  unsigned candidates = 0;
#pragma unroll 1
  for (long long tg = g_begin; tg < g_end; tg += kTileGroups) {
    {  // stage this tile's row: centred, with its norm (+inf past the block's rows: never a candidate)
      float staged[S];
      const bool inside = a.row_begin + tg * G + threadIdx.x < row_limit;
#pragma unroll
      for (int t = 0; t < DIM; ++t) staged[t] = inside ? next[t] - c : 0.f;
      float norm = __fmul_rn(staged[0], staged[0]);
#pragma unroll
      for (int t = 1; t < DIM; ++t) norm = __fmaf_rn(staged[t], staged[t], norm);
      staged[DIM] = inside ? norm : INFINITY;
#pragma unroll
      for (int t = DIM + 1; t < S; ++t) staged[t] = 0.f;
      __syncthreads();  // the previous tile is scored by every thread
#pragma unroll
      for (int i = 0; i < S / 4; ++i)
        tile[threadIdx.x * (S / 4) + i] = make_float4(staged[4 * i], staged[4 * i + 1], staged[4 * i + 2], staged[4 * i + 3]);
    }
    if (tg + kTileGroups < g_end) load(tg + kTileGroups);
    if (any_query) s.refresh(a);
    __syncthreads();
    if (!any_query) continue;
    const int tile_groups = int(min((long long)kTileGroups, g_end - tg));
#pragma unroll 1
    for (int j0 = rt; j0 < tile_groups; j0 += a.ref_threads) {
      float x[G][DIM], norm[G];
#pragma unroll
      for (int j = 0; j < G; ++j) {
        float r[S];
#pragma unroll
        for (int i = 0; i < S / 4; ++i) {
          const float4 f = tile[(j0 * G + j) * (S / 4) + i];
          r[4 * i] = f.x, r[4 * i + 1] = f.y, r[4 * i + 2] = f.z, r[4 * i + 3] = f.w;
        }
#pragma unroll
        for (int t = 0; t < DIM; ++t) x[j][t] = r[t];
        norm[j] = r[DIM];
      }
      const unsigned flagged = s.flag(x, norm);
      if (flagged != 0) {
        const int row0 = int(a.row_begin + (tg + j0) * G);
        s.examine(a, flagged, row0, a.row_end - row0, candidates);
      }
    }
  }
  count_candidates(a, candidates);
}

// The kernel for k dimensions (1 .. kFp32MaxDim; else nullptr), Q queries per thread, and rows
// staged (Fp32Plan::stage) or not.
template <int Q, int... D>
inline void (*pick(int dim, bool stage, std::integer_sequence<int, D...>))(scan::Args) {
  using Kernel = void (*)(scan::Args);
  static const Kernel from_global[] = {filter_kernel<D + 1, Q>...};
  static const Kernel from_tile[] = {staged_kernel<D + 1, Q>...};
  if (dim < 1 || dim > int(sizeof...(D))) return nullptr;
  return (stage ? from_tile : from_global)[dim - 1];
}
template <int Q>
inline void (*pick(int dim, bool stage))(scan::Args) {
  return pick<Q>(dim, stage, std::make_integer_sequence<int, kFp32MaxDim>{});
}

}  // namespace knn::gpu::f32
