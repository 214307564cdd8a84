#pragma once
// v15's fp32 filter on CUDA cores (the rule and the bound: kernels/common/tc_filter.hpp), for the
// nearest neighbour of float data with k below the tensor-core filter's range.
//
// The fused scan's layout (kernels/common/fused_scan.cuh): blocks of kScanBlock threads = QT query
// threads × RT row threads, blockIdx.x = query group × splits + split; a thread holds Q queries
// (kFp32Queries, or 4) and reads its split's rows 4 at a time (k 16-byte loads, the next group's
// issued before the current one is scored). It keeps, per query, w = −2 (q − c) in registers, and
// per row computes x = r − c and ‖x‖² once for all its queries; a pair's score ‖x‖² + w·x is then
// k fused multiply-adds and one comparison with the query's threshold, which only sets the
// query's flag: no branch among a group's 4·Q pairs. When a query is flagged (rare once the
// thresholds are tight), each of the group's rows gets the scan's own distance
// (tc::exact_distance; row and query read again through the cache, since keeping them in
// registers for a rare branch would cost occupancy), and the query's best exact pair and threshold
// follow; an improvement is published at once by atomicMin on the query's key. The tensor-core
// filter's argument (kernels/common/tc_filter.cuh) shows that no row that could be the scan's
// answer, or tie with it, is passed over: examining more rows than the flagged ones only costs
// time. Every kRefresh groups a thread reads its queries' keys (what every thread has published,
// seeded by tc::seed_kernel), so thresholds tighten across blocks.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/fused_scan.cuh"
#include "kernels/common/tc_filter.cuh"
#include "kernels/common/tc_filter.hpp"

namespace knn::gpu::f32 {

// Row groups between two reads of a thread's query keys.
constexpr int kRefresh = 32;

template <int DIM, int Q>
__global__ void __launch_bounds__(kScanBlock, Q == 8 ? (DIM <= 3 ? 3 : 2) : (DIM <= 3 ? 5 : 4)) filter_kernel(scan::Args a) {
  constexpr int G = kScanGroup;
  const int qt = threadIdx.x % a.query_threads, rt = threadIdx.x / a.query_threads;
  const int group = blockIdx.x / a.splits, split = blockIdx.x % a.splits;
  // Query slot u is first_query + u·QT; slots past m take no candidates (threshold −inf) and read
  // query m − 1. A thread whose first slot is past m has no query and only takes part in the
  // warp's sums at the end.
  const int first_query = group * Q * a.query_threads + qt;
  const bool any_query = first_query < a.m;
  const auto query_of = [&](int u) { return min(first_query + u * a.query_threads, a.m - 1); };
  const float c = a.tc_center, band = a.tc_band;

  float w[Q][DIM];
  float best[Q], threshold[Q];
  std::int32_t index[Q];
#pragma unroll
  for (int u = 0; u < Q; ++u) {
    const bool active = first_query + u * a.query_threads < a.m;
    const float* row = a.queries + std::size_t(query_of(u)) * DIM;
#pragma unroll
    for (int t = 0; t < DIM; ++t) w[u][t] = -2.f * (__ldg(row + t) - c);
    best[u] = INFINITY, index[u] = -1;
    threshold[u] = active ? INFINITY : -INFINITY;  // -inf: a slot past m never takes a candidate
  }
  // Takes each query's key when it beats what the thread knows.
  const auto refresh = [&]() {
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      if (threshold[u] == -INFINITY) continue;
      const unsigned long long key = __ldcg(a.best + query_of(u));
      if (key < scan::pack(best[u], index[u])) {
        best[u] = __uint_as_float(unsigned(key >> 32)), index[u] = std::int32_t(unsigned(key));
        threshold[u] = tc::threshold_for(best[u], tc::norm_low(a.queries + std::size_t(query_of(u)) * DIM, DIM, c), band);
      }
    }
  };
  refresh();

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
    // Every score goes straight into its query's flag: no branch among the 4·Q pairs, so their
    // fused multiply-adds interleave, and no score stays live.
    unsigned flagged = 0;
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      bool hit = false;
#pragma unroll
      for (int j = 0; j < G; ++j) {
        float v = norm[j];
#pragma unroll
        for (int t = 0; t < DIM; ++t) v = __fmaf_rn(w[u][t], x[j][t], v);
        hit |= v <= threshold[u];
      }
      flagged |= hit ? 1u << u : 0u;
    }
    if (flagged != 0) {  // rare once the thresholds are tight: every row of a flagged query is examined
#pragma unroll
      for (int u = 0; u < Q; ++u) {
        if (!(flagged & (1u << u))) continue;
        const int qu = first_query + u * a.query_threads;
        const float* qrow = a.queries + std::size_t(qu) * DIM;
#pragma unroll
        for (int j = 0; j < G; ++j) {
          const int row = row0 + j;
          if (j >= valid || (a.self_join && row == qu)) continue;
          ++candidates;
          const float e = tc::exact_distance<DIM>(qrow, a.references + std::size_t(row) * DIM);
          if (e < best[u] || (e == best[u] && row < index[u])) {
            best[u] = e, index[u] = row;
            threshold[u] = tc::threshold_for(e, tc::norm_low(qrow, DIM, c), band);
            atomicMin(a.best + qu, scan::pack(e, row));  // published at once: other threads' refreshes take it
          }
        }
      }
    }
    if (++since == kRefresh) since = 0, refresh();
  }
  // kScanBlock is a multiple of 32 and no thread has left: the whole warp sums its count.
#pragma unroll
  for (int off = 16; off > 0; off /= 2) candidates += __shfl_xor_sync(0xffffffffu, candidates, off);
  if ((threadIdx.x & 31) == 0 && candidates > 0) atomicAdd(a.tc_candidates, (unsigned long long)candidates);
}

}  // namespace knn::gpu::f32
