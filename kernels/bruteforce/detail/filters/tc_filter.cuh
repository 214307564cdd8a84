#pragma once
// v15's tensor-core filter kernel (the rule and the bound: kernels/bruteforce/detail/filters/tc_filter.hpp).
//
// A block is 4 warps of 64 queries each; blockIdx.x = query group × splits + split. A warp holds
// its 4 tiles of 16 queries as TF32 A fragments of −2(q − c) (m16n8k8: lane (g, t) = (lane / 4,
// lane % 4) holds rows g and g + 8, columns t and t + 4 of each 8-dimension slice). The block
// stages 256 rows of its split at a time in shared memory, with each row's ‖r − c‖² (fp32); every
// warp then takes the stage 8 rows per step: lane (g, t) reads row g, columns t and t + 4 of every
// slice, less c, as the B fragment and the norms of rows 2t and 2t + 1 (the columns its
// accumulators hold) as C. One mma.sync per slice and tile gives ‖r − c‖² − 2 (q − c)·(r − c) for
// 16 queries × 8 rows. A lane keeps, for each of its 8 queries, a bound: an exact (distance, index)
// key at least the query's final topk-th (for topk = 1: the best pair it knows), and the score
// threshold that follows from it; a score at or below the threshold makes the row a candidate,
// whose distance is computed as the fused scan computes it (first term a product, then fused
// multiply-adds, in dimension order; from shared memory for k ≤ 16, where the block also keeps its
// queries) and offered to the query's topk keys in global memory (offer below: atomicMin for
// topk = 1). At every stage a lane reads each query's last key back, so a threshold tightens with
// what every block has found; the keys start from seed_kernel's exact distances to 256 rows of
// the first chunk.
//
// Why nothing is lost: let (d*, r*) be any pair of the scan's answer and (b, i) a lane's bound.
// (d*, r*) ≤ the final topk-th key ≤ (b, i), so d* ≤ b; the true squared distance D(r*) ≤
// d*·(1 + 2^-18) (the fp32 sum's error, k ≤ 32); D(r*) = ‖q − c‖² + S(r*) with S the true score;
// the computed score is at most S(r*) + E. So score(r*) ≤ b·(1 + 2^-18) − ‖q − c‖² + E, which the
// threshold bounds from above (rounded up, with ‖q − c‖² taken from below). A row above the
// threshold cannot be in the answer, nor tie with its last pair.
// Underflow (subnormal terms in d*, ‖q − c‖² or the score) costs at most a few times 2^-149 per
// operation: the 2^-100 added to every band covers it.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/bruteforce/detail/scan/fused_scan.cuh"
#include "kernels/bruteforce/detail/filters/score_bound.cuh"
#include "kernels/bruteforce/detail/filters/tc_filter.hpp"

namespace knn::gpu::tc {

// Rows of the first chunk whose exact distance seeds every query's key before the filter runs.
// (Both filters. The fp32 filter of case 10 with 2048 made 107 exact distances per query instead of
// 652, in a kernel no faster: results/h100/v15/fp32/seed2048-*.)
constexpr int kSeedRows = 256;
constexpr int kSeedBlock = 128;

struct Slot {
  float best;          // the bound's distance: at least the query's final topk-th (+inf: none yet)
  std::int32_t index;  // its row (-1: none)
  float threshold;     // a score above this cannot enter the answer; -inf for a slot past m
  float norm_low;      // a lower bound of ‖q − c‖²
};

// The key of an empty slot (+inf, index -1): every real key sorts before it.
constexpr unsigned long long kNoKey = (0x7f800000ULL << 32) | 0xffffffffULL;

// A query's `topk` slots of packed (distance, index) keys, shared by every thread that filters the
// query's rows. A key is offered by a cascade of atomicMin from slot 0 on: each slot keeps the
// smaller key and the larger one goes on to the next, off the end after slot topk − 1. Each slot
// only ever decreases, and a key that left slot s was at least slot s's value then, so however the
// cascades of several threads interleave: once all are done, the slots hold the topk smallest keys
// offered (in some order: the lists are sorted at the end), and at any moment the last slot holds a
// key at least the t-th smallest key offered so far, hence at least the final t-th (a key reaches
// the last slot only past t − 1 smaller keys). So the last slot is a safe bound for a threshold.
// Returns the last slot's key just after this cascade passed it, or ~0 when the cascade stopped
// earlier: at an empty slot (the list was not full) or at its own key (already in the list: the
// seed kernel offered that row before the filter found it again). For topk = 1 it returns the key
// itself (the slot is then at most the key) without waiting for the atomic: a thread that waited
// for each improvement's round trip made case 10's fp32 filter twice as slow.
__device__ __forceinline__ unsigned long long offer(unsigned long long* list, int topk, unsigned long long key) {
  if (topk == 1) {
    atomicMin(list, key);  // no return value used: a reduction the thread does not wait for
    return key;
  }
  unsigned long long carry = key;
  for (int s = 0; s < topk; ++s) {
    const unsigned long long old = atomicMin(list + s, carry);
    if (s == topk - 1) return old < carry ? old : carry;
    if (old == carry) return ~0ULL;  // the same key is there (never kNoKey: that returned below)
    if (old > carry) carry = old;
    if (carry == kNoKey) return ~0ULL;
  }
  return ~0ULL;
}

// A block's lists of `count` queries from `first` on, kept in shared memory during a kernel, written
// back to the queries' keys in global memory (queries past m skipped).
__device__ __forceinline__ void store_lists(const unsigned long long* lists, unsigned long long* best, int first, int count,
                                            int m, int topk) {
  for (int i = threadIdx.x; i < count * topk; i += blockDim.x) {
    const int q = first + i / topk;
    if (q < m) best[std::size_t(q) * topk + i % topk] = lists[i];
  }
}

// A warp per query: the exact distance (the scan's) to min(kSeedRows, rows) distinct rows spread
// over [a.row_begin, a.row_end); the best topk of them fill the query's first slots (set to kNoKey
// before). Without it every lane starts with no threshold and takes its first rows as candidates
// until a refresh brings in what others found.
// A template only so that two translation units (v15 and the tile filter, tc_tile.cu) may both launch it.
template <int = 0>
__global__ void __launch_bounds__(kSeedBlock) seed_kernel(scan::Args a) {
  constexpr int kPerLane = kSeedRows / 32;
  const int lane = threadIdx.x & 31;
  const long long q = ((long long)blockIdx.x * kSeedBlock + threadIdx.x) / 32;
  if (q >= a.m) return;  // the whole warp
  const long long rows = a.row_end - a.row_begin;
  const long long count = rows < kSeedRows ? rows : kSeedRows;
  unsigned long long mine[kPerLane];
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int s = lane + 32 * i;
    const int row = a.row_begin + int(rows * s / (count > 0 ? count : 1));
    mine[i] = kNoKey;
    if (s >= count || (a.self_join && row == q)) continue;
    const float e = exact_distance(a.queries + std::size_t(q) * a.dim, a.references + std::size_t(row) * a.dim, a.dim);
    mine[i] = scan::pack(e, row);
  }
  // topk rounds of a warp-wide minimum; the lane that held it drops it (the keys are distinct).
  for (int r = 0; r < a.topk; ++r) {
    unsigned long long least = mine[0];
#pragma unroll
    for (int i = 1; i < kPerLane; ++i) least = mine[i] < least ? mine[i] : least;
    const unsigned long long best = warp::min(least);
    if (best == kNoKey) break;
    if (lane == 0) atomicMin(a.best + std::size_t(q) * a.topk + r, best);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) mine[i] = mine[i] == best ? kNoKey : mine[i];
  }
}


// SPLIT: every value is carried as two TF32 numbers, hi + lo, and each product as hi·hi + hi·lo +
// lo·hi (three mma.sync): the score is then about as precise as fp32, the band about 25 times
// narrower, at three times the tensor work (taken where that work is small: k ≤ 8).
template <int KS, bool SPLIT>
__global__ void __launch_bounds__(kTcBlock, KS <= 2 ? 4 : 2) filter_kernel(scan::Args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // Row stride of the staged rows: 8·KS values and 4 of padding, so the 8 rows × 4 columns a
  // fragment load touches fall in 32 different banks.
  constexpr int kStride = kTcSliceDims * KS + 4;
  // The block's queries as given (k ≤ 16: a candidate's distance then reads shared memory only;
  // above, the queries' rows are read through the cache).
  constexpr bool kSharedQueries = KS <= 2;
  constexpr int kQueryStride = kTcSliceDims * KS;
  constexpr int P = SPLIT ? 2 : 1;  // [0] hi (or the single TF32 value), [1] lo
  // One slice: the staged rows also as B fragments, r − c in TF32 (and its remainder with SPLIT),
  // converted once per row when staged instead of once per warp and step (405: 422 ms against
  // 447). More slices keep converting per step: both copies would not fit 48 KB of shared memory.
  constexpr bool kConverted = KS == 1;
  __shared__ float staged[kTcStageRows * kStride];
  __shared__ std::uint32_t converted[kConverted ? P : 1][kConverted ? kTcStageRows * kStride : 1];
  __shared__ float norms[kTcStageRows];
  __shared__ float queries[kSharedQueries ? kTcBlockQueries * kQueryStride : 1];
  // With a.tc_shared_lists (one split: no other block touches this block's queries during the
  // kernel), the block's queries' topk keys, copied in at the start and back at the end, so the
  // cascades of tc::offer are shared-memory atomics.
  extern __shared__ unsigned long long owned_lists[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int group = blockIdx.x / a.splits, split = blockIdx.x % a.splits;
  const int q_first = group * kTcBlockQueries + warp * kTcWarpQueries;
  const float c = a.tc_center, band = a.tc_band;
  const int dim = a.dim;
  // Columns past k stay zero for the whole kernel (only columns < k are ever written) and meet
  // zero A columns.
  for (int i = threadIdx.x; i < kTcStageRows * kStride; i += kTcBlock) {
    staged[i] = 0.f;
    if constexpr (kConverted)
#pragma unroll
      for (int h = 0; h < P; ++h) converted[h][i] = 0u;
  }
  const int block_first = group * kTcBlockQueries;
  const bool shared_lists = a.tc_shared_lists;
  const int topk = a.topk;
  if (shared_lists)
    for (int i = threadIdx.x; i < kTcBlockQueries * topk; i += kTcBlock) {
      const int q = block_first + i / topk;
      owned_lists[i] = q < a.m ? a.best[std::size_t(q) * topk + i % topk] : kNoKey;
    }
  __syncthreads();  // the lists are in before any lane reads them
  // Query q's keys.
  const auto list_of = [&](int q) {
    return shared_lists ? owned_lists + std::size_t(q - block_first) * topk : a.best + std::size_t(q) * topk;
  };
  if constexpr (kSharedQueries) {
    for (int i = threadIdx.x; i < kTcBlockQueries * dim; i += kTcBlock) {
      const int ql = i / dim, col = i - ql * dim;
      queries[ql * kQueryStride + col] = block_first + ql < a.m ? __ldg(a.queries + std::size_t(block_first + ql) * dim + col) : 0.f;
    }
  }

  std::uint32_t frag[kTcTiles][KS][P][4];
  Slot slot[kTcTiles][2];
#pragma unroll
  for (int t = 0; t < kTcTiles; ++t) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int q = q_first + t * kTcTileQueries + g + 8 * h;
      Slot& s = slot[t][h];
      if (q < a.m) {
        s.norm_low = norm_low(a.queries + std::size_t(q) * dim, dim, c);
        s.best = INFINITY, s.index = -1;
        s.threshold = INFINITY;  // set from the query's key at the first stage
      } else {
        s.best = INFINITY, s.index = -1, s.norm_low = 0.f, s.threshold = -INFINITY;
      }
    }
#pragma unroll
    for (int k8 = 0; k8 < KS; ++k8)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int q = q_first + t * kTcTileQueries + g + 8 * (e & 1);
        const int col = k8 * kTcSliceDims + t4 + 4 * (e >> 1);
        const float x = q < a.m && col < dim ? -2.f * (__ldg(a.queries + std::size_t(q) * dim + col) - c) : 0.f;
        frag[t][k8][0][e] = to_tf32(x);
        if constexpr (SPLIT) frag[t][k8][P - 1][e] = to_tf32(x - __uint_as_float(frag[t][k8][0][e]));
      }
  }

  const long long rows = (long long)a.row_end - a.row_begin;
  const long long stages = (rows + kTcStageRows - 1) / kTcStageRows;
  const long long s_end = stages * (split + 1) / a.splits;
  unsigned candidates = 0;
  for (long long st = stages * split / a.splits; st < s_end; ++st) {
    const int base = a.row_begin + int(st) * kTcStageRows;
    // The queries' keys (what every block has found so far), read before the stage's rows so the
    // two latencies overlap; applied after the barrier.
    unsigned long long key[kTcTiles][2];
#pragma unroll
    for (int t = 0; t < kTcTiles; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int q = q_first + t * kTcTileQueries + g + 8 * h;
        const unsigned long long* last = list_of(q) + topk - 1;
        key[t][h] = q >= a.m ? ~0ULL : shared_lists ? *last : __ldcg(last);
      }
    __syncthreads();  // the previous stage is scored (and, the first time, the zeroing is done)
    for (int rr = threadIdx.x; rr < kTcStageRows; rr += kTcBlock) {
      const int row = base + rr;
      float norm = INFINITY;  // past the chunk: never a candidate
      if (row < a.row_end) {
        const float* rp = a.references + std::size_t(row) * dim;
        norm = 0.f;
        for (int i = 0; i < dim; ++i) {
          const float v = __ldg(rp + i), x = v - c;
          norm = __fmaf_rn(x, x, norm);
          staged[rr * kStride + i] = v;
          if constexpr (kConverted) {
            const std::uint32_t hi = to_tf32(x);
            converted[0][rr * kStride + i] = hi;
            if constexpr (SPLIT) converted[P - 1][rr * kStride + i] = to_tf32(x - __uint_as_float(hi));
          }
        }
      }
      norms[rr] = norm;
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kTcTiles; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        Slot& s = slot[t][h];
        if (key[t][h] < scan::pack(s.best, s.index)) {
          s.best = __uint_as_float(unsigned(key[t][h] >> 32)), s.index = std::int32_t(unsigned(key[t][h]));
          s.threshold = threshold_for(s.best, s.norm_low, band);
        }
      }
    const int stage_rows = min(kTcStageRows, a.row_end - base);
    for (int r8 = 0; r8 < stage_rows; r8 += kTcStepRows) {
      std::uint32_t b[KS][P][2];
      const int mine = (r8 + g) * kStride + t4;
#pragma unroll
      for (int k8 = 0; k8 < KS; ++k8)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int at = mine + k8 * kTcSliceDims + 4 * e;
          if constexpr (kConverted) {
#pragma unroll
            for (int h = 0; h < P; ++h) b[k8][h][e] = converted[h][at];
          } else {  // columns past k: zero values less c, against zero A columns
            const float x = staged[at] - c;
            b[k8][0][e] = to_tf32(x);
            if constexpr (SPLIT) b[k8][P - 1][e] = to_tf32(x - __uint_as_float(b[k8][0][e]));
          }
        }
      const float n0 = norms[r8 + 2 * t4], n1 = norms[r8 + 2 * t4 + 1];
#pragma unroll
      for (int t = 0; t < kTcTiles; ++t) {
        float d[4] = {n0, n1, n0, n1};
#pragma unroll
        for (int k8 = 0; k8 < KS; ++k8) {
          if constexpr (SPLIT) {  // the small terms first
            mma_tf32(d, frag[t][k8][0], b[k8][1][0], b[k8][1][1]);
            mma_tf32(d, frag[t][k8][1], b[k8][0][0], b[k8][0][1]);
          }
          mma_tf32(d, frag[t][k8][0], b[k8][0][0], b[k8][0][1]);
        }
        const bool hit = d[0] <= slot[t][0].threshold || d[1] <= slot[t][0].threshold ||
                         d[2] <= slot[t][1].threshold || d[3] <= slot[t][1].threshold;
        if (hit) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            Slot& s = slot[t][j >> 1];
            if (!(d[j] <= s.threshold)) continue;
            const int row = base + r8 + 2 * t4 + (j & 1);
            const int q = q_first + t * kTcTileQueries + g + 8 * (j >> 1);
            if (row >= a.row_end || (a.self_join && row == q)) continue;
            ++candidates;
            float e;
            if constexpr (kSharedQueries)
              e = exact_distance(queries + (warp * kTcWarpQueries + t * kTcTileQueries + g + 8 * (j >> 1)) * kQueryStride,
                                 staged + (r8 + 2 * t4 + (j & 1)) * kStride, dim);
            else
              e = exact_distance(a.queries + std::size_t(q) * dim, a.references + std::size_t(row) * dim, dim);
            const unsigned long long mine = scan::pack(s.best, s.index), found = scan::pack(e, row);
            if (found < mine) {
              const unsigned long long bound = offer(list_of(q), topk, found);
              if (bound < mine) {
                s.best = __uint_as_float(unsigned(bound >> 32)), s.index = std::int32_t(unsigned(bound));
                s.threshold = threshold_for(s.best, s.norm_low, band);
              }
            }
          }
        }
      }
      __syncwarp();
    }
  }
  candidates = warp::sum(candidates);
  if (lane == 0 && candidates > 0) atomicAdd(a.tc_candidates, (unsigned long long)candidates);
  if (shared_lists) {
    __syncthreads();  // every cascade is done
    store_lists(owned_lists, a.best, block_first, kTcBlockQueries, a.m, topk);
  }
#else
  __trap();  // the plan takes this kernel only on compute capability 8.0 and later
#endif
}

}  // namespace knn::gpu::tc
