// v15's tile filter (tc_tile.hpp): the chunk's rows packed once as fp16 B fragments with their norms,
// then a block of 512 queries streams them through shared memory. Why nothing is lost is
// tc_filter.cuh's proof with scaled scores: s is a power of two, so s²·‖q − r‖², s²·‖q − c‖² and s²·S
// are the same numbers times s², and the threshold from a bound b is
// fl↑(fl↑(b·s²)·(1 + 2^-18) − fl↓(‖q − c‖²·s²)) + E_s.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "core/cuda/buffers.hpp"
#include "core/cuda/runtime.hpp"
#include "core/cuda/transfers.hpp"
#include "kernels/bruteforce/detail/filters/tc_filter.cuh"
#include "kernels/bruteforce/detail/filters/tc_tile.hpp"
#include "kernels/bruteforce/detail/scan/scan_plan.hpp"
#include "kernels/bruteforce/detail/scan/topk_merge.hpp"

namespace knn::gpu {
namespace {

constexpr int kStageLanes = kTileStageGroups * 32;  // one record per lane and 8-row group
// k up to which the product carries the norm (dimensions 12, 13: A 1 and 1, B the norm as fp16 hi + lo)
// and the threshold (14, 15); above, the accumulators start from the norms less the thresholds.
constexpr int kFoldDims = kTileDims - 4;

struct TileArgs {
  const float* __restrict__ queries;
  const float* __restrict__ references;
  // Per (group, lane): fp16 (r − c)s of row g, dimensions 2t, 2t+1 (x) and 2t+8, 2t+9 (y), then the fp32
  // ‖(r − c)s‖² of rows 2t (z) and 2t + 1 (w), the accumulator columns the lane holds.
  uint4* packed;
  int dim, m, topk, row_begin, row_end, stages;  // the chunk [row_begin, row_end): its groups padded to whole stages
  bool self_join;
  float center, scale, scale2, band;
  unsigned long long* best;  // m × topk keys
  unsigned long long* candidates;
};

__device__ __forceinline__ std::uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&h);
}

// The scaled centred value of dimension `col` of a row (0 past k).
__device__ __forceinline__ float scaled(const float* row, int col, int dim, float c, float s) {
  return col < dim ? (__ldg(row + col) - c) * s : 0.f;
}

// ‖(r − c)s‖² of a row in fp32.
__device__ __forceinline__ float row_norm(const TileArgs& a, long long row) {
  const float* r = a.references + std::size_t(row) * a.dim;
  float norm = 0.f;
  for (int i = 0; i < a.dim; ++i) {
    const float x = (__ldg(r + i) - a.center) * a.scale;
    norm = __fmaf_rn(x, x, norm);
  }
  return norm;
}

// One thread per (group, lane) of a chunk, padding groups included (norms +inf, or 65504 in fp16:
// never a candidate). For k ≤ kFoldDims only the fragments are kept (an uint2 per lane and group).
__global__ void pack_kernel(TileArgs a) {
  const long long id = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (id >= (long long)a.stages * kStageLanes) return;
  const int lane = int(id & 31), g = lane >> 2, t = lane & 3;
  const long long group_row = a.row_begin + (id >> 5) * 8;
  uint2 b{0u, 0u};
  if (group_row + g < a.row_end) {
    const float* r = a.references + std::size_t(group_row + g) * a.dim;
    b.x = pack_half2(scaled(r, 2 * t, a.dim, a.center, a.scale), scaled(r, 2 * t + 1, a.dim, a.center, a.scale));
    b.y = pack_half2(scaled(r, 2 * t + 8, a.dim, a.center, a.scale), scaled(r, 2 * t + 9, a.dim, a.center, a.scale));
  }
  const bool fold = a.dim <= kFoldDims;
  if (fold && t == 3) b.y = pack_half2(1.f, 1.f);  // dimensions 14 and 15: the folded threshold
  if (fold && t == 2) {                            // dimensions 12 and 13: row g's norm, hi + lo
    const float n = group_row + g < a.row_end ? row_norm(a, group_row + g) : 65504.f;
    const float hi = __half2float(__float2half_rn(n));
    b.y = pack_half2(hi, n - hi);
  }
  if (fold) {
    reinterpret_cast<uint2*>(a.packed)[id] = b;
    return;
  }
  float n[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const long long row = group_row + 2 * t + j;
    n[j] = INFINITY;
    if (row >= a.row_end) continue;
    n[j] = row_norm(a, row);
  }
  a.packed[id] = make_uint4(b.x, b.y, __float_as_uint(n[0]), __float_as_uint(n[1]));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ void copy16(void* shared, const void* global) {
  const unsigned s = unsigned(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(global));
}

// d = A·B + C for 16 queries × 8 rows × 16 dimensions (fp16 in, fp32 out).
__device__ __forceinline__ void mma16(float (&d)[4], const std::uint32_t (&a)[4], uint2 b, float4 c) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
}
#endif

// The scaled threshold for a query whose last key is `key` (kNoKey: +inf, every row a candidate).
__device__ __forceinline__ float threshold_from(unsigned long long key, float norm_low, const TileArgs& a) {
  const float best = __uint_as_float(unsigned(key >> 32));
  return tc::threshold_for(__fmul_ru(best, a.scale2), norm_low, a.band);
}

// A threshold moved into the product: the pair is a candidate when score − folded < 0, and folded
// exceeds the threshold by 2^-20 of it and 2^-13, which covers splitting it into two fp16 numbers (hi + lo
// within 2^-22 of it, or lo lost whole if the tensor cores flushed an fp16 subnormal: below 2^-14) and
// makes a score at the threshold come out below zero, never at +0. Clamped first to ±2^15 (±inf of
// queries past m or of lists not yet full included): beyond that every row (+) or none (−) is a
// candidate either way, since scores stay within 3W ≤ 48 of zero, and the sums' error is far below the gap.
constexpr float kFoldLimit = 32768.f;
__device__ __forceinline__ float fold(float threshold) {
  const float t = fminf(kFoldLimit, fmaxf(-kFoldLimit, threshold));
  return __fadd_ru(__fadd_ru(t, __fmul_ru(fabsf(t), 0x1p-20f)), 0x1p-13f);
}

// Dynamic shared memory: two stages of packed rows, the block's queries' scaled ‖q − c‖²
// from below, each warp's queue, and the queries' topk keys.
constexpr std::size_t kStageBytes = kStageLanes * sizeof(uint4);  // k ≤ kFoldDims: half
constexpr int kQueue = 128;  // (query, row) pairs per warp
std::size_t tile_shared_bytes(int dim, int topk) {
  return 2 * kStageBytes / (dim <= kFoldDims ? 2 : 1) + kTileWarps * kQueue * sizeof(int2) +
         kTileBlockQueries * (sizeof(float) + std::size_t(topk) * sizeof(unsigned long long));
}

// KFOLD (k ≤ 12): the norm is the product's dimensions 12 and 13 and the folded threshold 14 and 15 (A:
// −folded as fp16 hi + lo, B: 1 and 1), the accumulators start from 0, and a pair costs nothing after the
// mma but its sign. Otherwise (k 13..16) each tile's accumulators start from its rows' norms less the
// folded thresholds, rounded down.
template <bool KFOLD>
__global__ void __launch_bounds__(kTileBlock, KFOLD ? 6 : 4) tile_kernel(TileArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) unsigned char shared[];
  constexpr int copies = KFOLD ? kStageLanes / 2 : kStageLanes;  // 16-byte pieces of a stage
  uint4* stage = reinterpret_cast<uint4*>(shared);                 // [2][copies]
  float* norm_low = reinterpret_cast<float*>(stage + 2 * copies);  // [512]
  int2* queues = reinterpret_cast<int2*>(norm_low + kTileBlockQueries);                              // [4][kQueue]
  unsigned long long* lists = reinterpret_cast<unsigned long long*>(queues + kTileWarps * kQueue);  // [512][topk]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
  const int block_first = blockIdx.x * kTileBlockQueries, topk = a.topk, dim = a.dim;
  const auto load = [&](int st, int buffer) {
    const uint4* from = a.packed + std::size_t(st) * copies;
    for (int i = threadIdx.x; i < copies; i += kTileBlock) copy16(stage + buffer * copies + i, from + i);
    asm volatile("cp.async.commit_group;\n" ::);
  };
  load(0, 0);
  for (int i = threadIdx.x; i < kTileBlockQueries * topk; i += kTileBlock) {
    const int q = block_first + i / topk;
    lists[i] = q < a.m ? a.best[std::size_t(q) * topk + i % topk] : tc::kNoKey;
  }
  for (int i = threadIdx.x; i < kTileBlockQueries; i += kTileBlock) {
    const int q = block_first + i;
    norm_low[i] = q < a.m ? __fmul_rd(tc::norm_low(a.queries + std::size_t(q) * dim, dim, a.center), a.scale2) : 0.f;
  }
  // The warp's 8 tiles of 16 queries as A fragments of −2(q − c)s.
  const int warp_first = warp * 16 * kTileTiles;  // within the block
  std::uint32_t frag[kTileTiles][4];
#pragma unroll
  for (int t = 0; t < kTileTiles; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int q = block_first + warp_first + t * 16 + g + 8 * (e & 1), col = 2 * t4 + 8 * (e >> 1);
      const float* row = a.queries + std::size_t(q < a.m ? q : 0) * dim;
      const float s = -2.f * a.scale;
      frag[t][e] = q < a.m ? pack_half2(scaled(row, col, dim, a.center, s), scaled(row, col + 1, dim, a.center, s)) : 0u;
      if (KFOLD && t4 == 2 && e >= 2) frag[t][e] = pack_half2(1.f, 1.f);  // dimensions 12 and 13: times the norm
    }
  // Each query's folded threshold from its list's last key (at least the final topk-th: tc::offer).
  // Only this warp's drains change its queries' lists.
  float folded[kTileTiles][2];
  const auto refresh = [&] {
#pragma unroll
    for (int t = 0; t < kTileTiles; ++t)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int ql = warp_first + t * 16 + g + 8 * h;
        const unsigned long long last = *reinterpret_cast<volatile unsigned long long*>(lists + ql * topk + topk - 1);
        folded[t][h] = fold(block_first + ql < a.m ? threshold_from(last, norm_low[ql], a) : -INFINITY);
        if constexpr (KFOLD) {  // lane (g, 3) holds A's columns 14 and 15 of rows g (element 2) and g + 8 (3)
          const float hi = __half2float(__float2half_rn(-folded[t][h]));  // and lo: what hi leaves, in fp16
          if (t4 == 3) frag[t][2 + h] = pack_half2(hi, -folded[t][h] - hi);
        }
      }
  };
  unsigned candidates = 0;
  // Query ql's exact distance to a row (the scan's), offered to its keys.
  const auto enter = [&](int ql, int row) {
    const int q = block_first + ql;
    if (q >= a.m || row >= a.row_end || (a.self_join && row == q)) return;
    ++candidates;
    const float e = tc::exact_distance(a.queries + std::size_t(q) * dim, a.references + std::size_t(row) * dim, dim);
    const unsigned long long key = scan::pack(e, row);
    unsigned long long* list = lists + ql * topk;
    if (key < *reinterpret_cast<volatile unsigned long long*>(list + topk - 1)) tc::offer(list, topk, key);
  };
  // The warp's queue of (query, row) pairs that passed, entered by all lanes at once when half full
  // (and at the end): their exact distances' latencies overlap instead of stalling the warp per pair.
  int2* queue = queues + warp * kQueue;
  int queued = 0;  // the same in every lane
  const auto drain = [&] {
    if (queued == 0) return;
    __syncwarp();
    for (int i = lane; i < queued; i += 32) enter(queue[i].x, queue[i].y);
    __syncwarp();
    queued = 0;
    refresh();
  };
  // A step's pairs below zero (`mask`, bit 4t + j: tile t, accumulator j; rows row0 and row0 + 1).
  const auto enqueue = [&](unsigned mask, int row0) {
    const int mine = __popc(mask);
    int through = mine;  // this lane's and the lower lanes' pairs
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, through, o);
      if (lane >= o) through += v;
    }
    const int total = __shfl_sync(0xffffffffu, through, 31);
    if (total == 0) return;
    if (queued + total > kQueue) drain();
    if (total > kQueue) {  // more than the queue holds (loose thresholds, masses of ties): one by one
      for (; mask != 0; mask &= mask - 1) {
        const int bit = __ffs(mask) - 1;
        enter(warp_first + (bit >> 2) * 16 + g + 8 * ((bit & 3) >> 1), row0 + (bit & 1));
      }
      __syncwarp();  // the lanes meet again before the next mma.sync
      refresh();
      return;
    }
    for (int at = queued + through - mine; mask != 0; mask &= mask - 1, ++at) {
      const int bit = __ffs(mask) - 1;
      queue[at] = make_int2(warp_first + (bit >> 2) * 16 + g + 8 * ((bit & 3) >> 1), row0 + (bit & 1));
    }
    queued += total;
    if (queued >= kQueue / 2) drain();
  };
  __syncthreads();  // the lists and norms are in
  refresh();
  for (int st = 0; st < a.stages; ++st) {
    const int buffer = st & 1;
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();  // stage st is in for every thread, and every warp is done with the other buffer
    if (st + 1 < a.stages) load(st + 1, buffer ^ 1);
    using Record = std::conditional_t<KFOLD, uint2, uint4>;
    const Record* rows = reinterpret_cast<const Record*>(stage) + buffer * kStageLanes + lane;
    const int base = a.row_begin + st * kTileStageGroups * 8;
    Record next = rows[0];  // each step's record is read one step ahead
    for (int step = 0; step < kTileStageGroups; ++step) {
      const Record r = next;
      if (step + 1 < kTileStageGroups) next = rows[(step + 1) * 32];
      const uint2 b = make_uint2(r.x, r.y);
      float d[kTileTiles][4];
      std::uint32_t signs = 0;  // the OR of every score's bits: its sign bit is set when one is below zero
#pragma unroll
      for (int t = 0; t < kTileTiles; ++t) {
        if constexpr (KFOLD) {
          mma16(d[t], frag[t], b, make_float4(0.f, 0.f, 0.f, 0.f));
        } else {
          const float n0 = __uint_as_float(r.z), n1 = __uint_as_float(r.w);
          mma16(d[t], frag[t], b,
                make_float4(__fsub_rd(n0, folded[t][0]), __fsub_rd(n1, folded[t][0]), __fsub_rd(n0, folded[t][1]),
                            __fsub_rd(n1, folded[t][1])));
        }
        signs |= __float_as_uint(d[t][0]) | __float_as_uint(d[t][1]) | __float_as_uint(d[t][2]) | __float_as_uint(d[t][3]);
      }
      if (!__any_sync(0xffffffffu, int(signs) < 0)) continue;
      // The rare path: this lane's pairs below zero, one bit each, to the warp's queue.
      unsigned mask = 0;
#pragma unroll
      for (int t = 0; t < kTileTiles; ++t)
#pragma unroll
        for (int j = 0; j < 4; ++j) mask |= __float_as_int(d[t][j]) < 0 ? 1u << (4 * t + j) : 0u;
      enqueue(mask, base + step * 8 + 2 * t4);
    }
  }
  drain();
  candidates = warp::sum(candidates);
  if (lane == 0 && candidates > 0) atomicAdd(a.candidates, (unsigned long long)candidates);
  __syncthreads();  // every cascade is done
  tc::store_lists(lists, a.best, block_first, kTileBlockQueries, a.m, topk);
#else
  __trap();  // the plan takes this kernel only on compute capability 8.0 and later
#endif
}

int stages_of(int rows) { return ((rows + 7) / 8 + kTileStageGroups - 1) / kTileStageGroups; }

}  // namespace

std::size_t tile_device_bytes(const Problem& p, const TilePlan& plan) {
  const int largest = plan.chunk_rows.empty() ? p.n : largest_chunk(plan.chunk_rows);
  const std::size_t packed = std::size_t(stages_of(largest)) * kStageBytes;
  return std::size_t(p.n) * p.dim * sizeof(float) + (p.self_join ? 0 : p.query_floats() * sizeof(float)) +
         p.result_slots() * (sizeof(std::int32_t) + sizeof(float)) + packed +
         std::size_t(p.m) * p.topk * sizeof(unsigned long long) + PartialMerge::device_bytes(p.m, p.topk) + 8;
}

void tile_search(const Problem& p, const TilePlan& plan, Neighbors out, RunContext& ctx) {
  if (!plan.chosen) throw std::logic_error("tile_search: the plan did not choose the tile filter");
  const std::size_t shared = tile_shared_bytes(p.dim, p.topk);
  const bool fold_k = p.dim <= kFoldDims;
  const auto kernel = fold_k ? tile_kernel<true> : tile_kernel<false>;
  KNN_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  cuda::Stream copy, search;
  const int chunks = plan.chunks();
  const int largest_stages = stages_of(largest_chunk(plan.chunk_rows));
  cuda::StreamBuffer<float> references(std::size_t(p.n) * p.dim, copy);
  cuda::StreamBuffer<float> own_queries(p.self_join ? 0 : p.query_floats(), copy);
  cuda::StreamBuffer<uint4> packed(std::size_t(largest_stages) * kStageLanes, copy);
  cuda::StreamBuffer<unsigned long long> best(std::size_t(p.m) * p.topk, copy);
  cuda::StreamBuffer<unsigned long long> counted(1, copy);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), copy);
  cuda::StreamBuffer<float> distances(p.result_slots(), copy);
  PartialMerge merger(p.m, p.topk, p.topk, copy, false);
  // Destroyed before the buffers (declared after them): on an exception, the kernels already queued on
  // the search stream finish before the copy stream frees what they read.
  const cuda::JoinOnUnwind join(search);

  TileArgs a{};
  a.queries = p.self_join ? references.data() : own_queries.data();
  a.references = references.data();
  a.packed = packed.data();
  a.dim = p.dim, a.m = p.m, a.topk = p.topk, a.self_join = p.self_join;
  a.center = plan.center, a.scale = plan.scale, a.scale2 = plan.scale * plan.scale, a.band = plan.band;
  a.best = best.data(), a.candidates = counted.data();
  scan::Args seed{};
  seed.queries = a.queries, seed.references = a.references, seed.dim = p.dim, seed.m = p.m, seed.topk = p.topk;
  seed.self_join = p.self_join, seed.best = best.data();

  cuda::Event start, search_start, searched, merged, done;
  std::vector<cuda::Event> copied(chunks);
  start.record(copy);
  KNN_CUDA_TRY(cudaStreamWaitEvent(search, start.get(), 0));
  fill_worst_keys(best.data(), (long long)p.m * p.topk, search);
  KNN_CUDA_TRY(cudaMemsetAsync(counted.data(), 0, sizeof(unsigned long long), search));
  if (!p.self_join)
    KNN_CUDA_TRY(cudaMemcpyAsync(own_queries.data(), p.queries, p.query_floats() * sizeof(float), cudaMemcpyHostToDevice, copy));
  for (int c = 0; c < chunks; ++c) {
    const std::size_t first = std::size_t(plan.chunk_rows[c]) * p.dim;
    const std::size_t floats = std::size_t(plan.chunk_rows[c + 1] - plan.chunk_rows[c]) * p.dim;
    KNN_CUDA_TRY(cudaMemcpyAsync(references.data() + first, p.references + first, floats * sizeof(float), cudaMemcpyHostToDevice, copy));
    copied[c].record(copy);
  }
  for (int c = 0; c < chunks; ++c) {
    KNN_CUDA_TRY(cudaStreamWaitEvent(search, copied[c].get(), 0));
    if (c == 0) search_start.record(search);
    a.row_begin = seed.row_begin = plan.chunk_rows[c], a.row_end = seed.row_end = plan.chunk_rows[c + 1];
    a.stages = stages_of(a.row_end - a.row_begin);
    if (c == 0) {  // the keys start from exact distances to 256 rows of the first chunk
      const long long threads = (long long)p.m * 32;
      tc::seed_kernel<><<<int((threads + tc::kSeedBlock - 1) / tc::kSeedBlock), tc::kSeedBlock, 0, search>>>(seed);
      KNN_CUDA_CHECK_LAUNCH();
    }
    const long long lanes = (long long)a.stages * kStageLanes;
    pack_kernel<<<int((lanes + 255) / 256), 256, 0, search>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
    kernel<<<plan.blocks, kTileBlock, shared, search>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
  }
  searched.record(search);
  KNN_CUDA_TRY(cudaStreamWaitEvent(copy, searched.get(), 0));
  merger.enqueue_keys(best.data(), indices.data(), distances.data());
  merged.record(copy);
  cuda::download_answers(p, indices.data(), distances.data(), out, copy);
  done.record(copy);
  unsigned long long exact_count = 0;  // after the last timed event: no part of the answer
  KNN_CUDA_TRY(cudaMemcpyAsync(&exact_count, counted.data(), sizeof exact_count, cudaMemcpyDeviceToHost, copy));
  copy.synchronize();

  report_chunk_phases(ctx.timing, start, copied[chunks - 1], search_start, searched, merged, done);
  ctx.path = fmt::format(
      "tile filter: k={} as one fp16 m16n8k16 product, scores s^2(||r-c||^2 - 2(q-c).(r-c)) with c = {:g}, s = 2^{}, less "
      "each query's threshold ({}), error bound {:.3g} (scaled; values within {:g} of c); {} exact fp32 distances for candidates ({:.1f} per query, {:.4f} % of "
      "the pairs, queued by each warp and taken {} at a time; {} seed distances per query besides); {} blocks of {} threads ({} warps x {} queries), rows packed once per chunk "
      "and streamed through shared memory {} at a time; {}; {}",
      p.dim, plan.center, std::ilogb(plan.scale),
      fold_k ? "norm and threshold as 4 more dimensions" : "accumulators started from the norm less the threshold", plan.band, plan.half_span, exact_count, double(exact_count) / p.m,
      100.0 * double(exact_count) / (double(p.m) * p.n), kQueue / 2, tc::kSeedRows, plan.blocks, kTileBlock, kTileWarps, 16 * kTileTiles,
      8 * kTileStageGroups, chunks_text(plan.chunk_rows, p.dim, false), filter_lists_text(p.topk) + " (in shared memory)");
}

}  // namespace knn::gpu
