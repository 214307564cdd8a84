// The candidate buffers' tensor-core collecting kernel (kernels/bruteforce/detail/seed/seed_collect.hpp: the
// buffers; tc_filter.cuh: the score, its error bound and why nothing is lost). The scores of every
// (query, row) pair come from mma.sync (TF32, m16n8k8: one slice, k <= 8) against each query's
// threshold from the seed's bound; a row whose score passes gets the fused scan's exact distance,
// and one below the bound goes into a buffer, as on the CUDA cores (seed_collect.cu). The layout is
// the tensor-core filter's: 4 warps of 4 tiles of 16 queries (the seed's slots, neighbours in
// Morton order), 8 rows per step staged 256 at a time. Lane (g, t) holds the scores of rows 2t and
// 2t + 1 of each step for queries g and g + 8 of each tile, so each (query, lane) pair has its own
// buffer and bound (4 per query and split of the rows): a lane meets its rows in index order, which
// keeps the cut exact with ties.
#include "kernels/bruteforce/detail/seed/seed_collect_kernels.cuh"

#include <cmath>

#include "core/cuda/error.hpp"
#include "kernels/bruteforce/detail/seed/seed_collect.hpp"
#include "kernels/bruteforce/detail/scan/fused_scan.cuh"
#include "kernels/bruteforce/detail/filters/score_bound.cuh"
#include "kernels/bruteforce/detail/filters/tc_filter.hpp"
#include "kernels/device/warp_reduce.cuh"

namespace knn::gpu::collect {
namespace {

static_assert(kCollectTcQueries == kTcBlockQueries, "plan_collect_tensor's blocks are the filter's");
static_assert(kCollectTcLanes == 4, "lane (g, t) of m16n8k8 holds 2 of 8 rows: 4 lanes per query");
constexpr int kStride = kTcSliceDims + 4;  // one slice and 4 floats of padding: 32 banks per fragment load

template <bool SPLIT>
__global__ void __launch_bounds__(kTcBlock) collect_tc_kernel(const __grid_constant__ Args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (!gate_open(a)) return;  // the whole grid: the CUDA cores' kernel runs instead
  constexpr int P = SPLIT ? 2 : 1;  // [0] hi (or the single TF32 value), [1] lo
  __shared__ float staged[kTcStageRows * kStride];                // the rows as given (exact distances)
  __shared__ std::uint32_t converted[P][kTcStageRows * kStride];  // r - c as TF32 (hi, lo)
  __shared__ float norms[kTcStageRows];                           // ||r - c||^2 (+inf past n)
  // What only the rare path reads, by (tile, half) and lane: the lane's bound and the keys in its
  // buffer (the query and its norm are read again where needed: 48 KB of shared memory).
  __shared__ int s_count[kTcWarps][kTcTiles][2][32];
  __shared__ float s_bound[kTcWarps][kTcTiles][2][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
  const int group = blockIdx.x / a.row_splits, split = blockIdx.x % a.row_splits;
  const int slot0 = group * kTcBlockQueries + warp * kTcWarpQueries;
  const float c = a.center;
  // Columns past k stay zero (only columns < k are written) and meet zero A columns.
  for (int i = threadIdx.x; i < kTcStageRows * kStride; i += kTcBlock) {
    staged[i] = 0.f;
#pragma unroll
    for (int h = 0; h < P; ++h) converted[h][i] = 0u;
  }
  std::uint32_t frag[kTcTiles][P][4];
  float limit[kTcTiles][2];
#pragma unroll
  for (int t = 0; t < kTcTiles; ++t) {
    int query[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int slot = slot0 + t * kTcTileQueries + g + 8 * h;
      const bool active = slot < a.m;
      const int q = query[h] = a.order[active ? slot : a.m - 1];
      const float norm = tc::norm_low(a.queries + std::size_t(q) * a.dim, a.dim, c);
      const float bound = active ? a.bound[q] : -INFINITY;  // an idle slot admits nothing
      limit[t][h] = active ? tc::threshold_for(bound, norm, a.band) : -INFINITY;
      s_count[warp][t][h][lane] = 0, s_bound[warp][t][h][lane] = bound;
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = t4 + 4 * (e >> 1);
      const float x = col < a.dim ? -2.f * (__ldg(a.queries + std::size_t(query[e & 1]) * a.dim + col) - c) : 0.f;
      frag[t][0][e] = tc::to_tf32(x);
      if constexpr (SPLIT) frag[t][P - 1][e] = tc::to_tf32(x - __uint_as_float(frag[t][0][e]));
    }
  }
  unsigned long long appended = 0, cuts = 0;
  const long long stages = (a.n + kTcStageRows - 1) / kTcStageRows;
  const long long s_end = stages * (split + 1) / a.row_splits;
  for (long long st = stages * split / a.row_splits; st < s_end; ++st) {
    const int base = int(st) * kTcStageRows;
    __syncthreads();  // the previous stage is scored (the first time: the zeroing is done)
    for (int rr = threadIdx.x; rr < kTcStageRows; rr += kTcBlock) {
      const int row = base + rr;
      float norm = INFINITY;  // past n: never a candidate
      if (row < a.n) {
        norm = 0.f;
        for (int i = 0; i < a.dim; ++i) {
          const float v = __ldg(a.rows + std::size_t(row) * a.dim + i), x = v - c;
          norm = __fmaf_rn(x, x, norm);
          staged[rr * kStride + i] = v;
          const std::uint32_t hi = tc::to_tf32(x);
          converted[0][rr * kStride + i] = hi;
          if constexpr (SPLIT) converted[P - 1][rr * kStride + i] = tc::to_tf32(x - __uint_as_float(hi));
        }
      }
      norms[rr] = norm;
    }
    __syncthreads();
    const int stage_rows = min(kTcStageRows, a.n - base);
    for (int r8 = 0; r8 < stage_rows; r8 += kTcStepRows) {
      std::uint32_t b[P][2];
#pragma unroll
      for (int h = 0; h < P; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) b[h][e] = converted[h][(r8 + g) * kStride + t4 + 4 * e];
      const float n0 = norms[r8 + 2 * t4], n1 = norms[r8 + 2 * t4 + 1];
      // The 4 tiles' products first, independent of each other, then one test of all 16 scores:
      // tile by tile, each test waited for its own product (case 405: 281 ms in the kernel).
      float d[kTcTiles][4];
      bool any = false;
#pragma unroll
      for (int t = 0; t < kTcTiles; ++t) {
        d[t][0] = n0, d[t][1] = n1, d[t][2] = n0, d[t][3] = n1;
        if constexpr (SPLIT) {  // the small terms first
          tc::mma_tf32(d[t], frag[t][0], b[1][0], b[1][1]);
          tc::mma_tf32(d[t], frag[t][1], b[0][0], b[0][1]);
        }
        tc::mma_tf32(d[t], frag[t][0], b[0][0], b[0][1]);
      }
#pragma unroll
      for (int t = 0; t < kTcTiles; ++t)
        any |= d[t][0] <= limit[t][0] || d[t][1] <= limit[t][0] || d[t][2] <= limit[t][1] || d[t][3] <= limit[t][1];
      if (any) {  // rare: some score passed
#pragma unroll
        for (int t = 0; t < kTcTiles; ++t) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int h = j >> 1, rr = r8 + 2 * t4 + (j & 1), row = base + rr;
            if (!(d[t][j] <= limit[t][h]) || row >= a.n) continue;
            const int slot = slot0 + t * kTcTileQueries + g + 8 * h, q = a.order[slot];
            if (a.self_join && row == q) continue;
            const float e = tc::exact_distance(a.queries + std::size_t(q) * a.dim, staged + rr * kStride, a.dim);
            float bound = s_bound[warp][t][h][lane];
            if (!(e < bound)) continue;
            unsigned long long* buffer = a.keys + (std::size_t(slot) * a.splits + split * kCollectTcLanes + t4) * a.capacity;
            int count = s_count[warp][t][h][lane];
            buffer[count] = scan::pack(e, row);
            ++appended;
            if (++count == a.capacity) {
              bound = fminf(bound, cut(buffer, a.capacity, a.topk));
              limit[t][h] = tc::threshold_for(bound, tc::norm_low(a.queries + std::size_t(q) * a.dim, a.dim, c), a.band);
              count = a.topk, ++cuts;
              s_bound[warp][t][h][lane] = bound;
            }
            s_count[warp][t][h][lane] = count;
          }
        }
      }
      __syncwarp();  // the lanes the rare path split meet again before the next mma.sync.aligned
    }
  }
#pragma unroll
  for (int t = 0; t < kTcTiles; ++t)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int slot = slot0 + t * kTcTileQueries + g + 8 * h;
      if (slot < a.m) a.counts[std::size_t(slot) * a.splits + split * kCollectTcLanes + t4] = s_count[warp][t][h][lane];
    }
  appended = knn::gpu::warp::sum(appended), cuts = knn::gpu::warp::sum(cuts);
  if (lane == 0 && appended > 0) atomicAdd(a.stats, appended);
  if (lane == 0 && cuts > 0) atomicAdd(a.stats + 1, cuts);
#else
  __trap();  // the plan takes this kernel only on compute capability 8.0 and later
#endif
}

}  // namespace

void launch_collect_tc(const Args& a, long long blocks, bool split, cudaStream_t stream) {
  const unsigned grid = unsigned(blocks);
  if (split) collect_tc_kernel<true><<<grid, kTcBlock, 0, stream>>>(a);
  else collect_tc_kernel<false><<<grid, kTcBlock, 0, stream>>>(a);
  KNN_CUDA_CHECK_LAUNCH();
}

}  // namespace knn::gpu::collect
