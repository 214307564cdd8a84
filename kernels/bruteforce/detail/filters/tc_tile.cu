// v15's tile filter (tc_tile.hpp): the chunk's rows packed once as fp16 B fragments with their norms,
// then a block of 512 queries streams them through shared memory. Why nothing is lost is
// tc_filter.cuh's proof with scaled scores: s is a power of two, so s²·‖q − r‖², s²·‖q − c‖² and s²·S
// are the same numbers times s², and the threshold from a bound b is
// fl↑(fl↑(b·s²)·(1 + 2^-18) − fl↓(‖q − c‖²·s²)) + E_s.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "core/cuda/buffers.hpp"
#include "core/cuda/runtime.hpp"
#include "core/cuda/transfers.hpp"
#include "kernels/bruteforce/detail/filters/tc_filter.cuh"
#include "kernels/bruteforce/detail/filters/tc_tile.hpp"
#include "kernels/bruteforce/detail/filters/tc_tile_pack.cuh"
#include "kernels/bruteforce/detail/scan/scan_plan.hpp"
#include "kernels/bruteforce/detail/scan/topk_merge.hpp"

namespace knn::gpu {
namespace {

using namespace tile;  // the kernels' arguments and pieces (tc_tile_pack.cuh)

// The scaled threshold for a query whose last key is `key` (kNoKey: +inf, every row a candidate).
__device__ __forceinline__ float threshold_from(unsigned long long key, float norm_low, const TileArgs& a) {
  const float best = __uint_as_float(unsigned(key >> 32));
  return tc::threshold_for(__fmul_ru(best, a.scale2), norm_low, a.band);
}

// Dynamic shared memory: two stages of packed rows, the block's queries' scaled ‖q − c‖²
// from below, each warp's queue, and the queries' topk keys.
constexpr std::size_t kStageBytes = kStageLanes * sizeof(uint4);  // k ≤ kTileFoldDims: half
constexpr int kQueue = 128;  // (query, row) pairs per warp
std::size_t tile_shared_bytes(int dim, int topk) {
  return 2 * kStageBytes / (dim <= kTileFoldDims ? 2 : 1) + kTileWarps * kQueue * sizeof(int2) +
         kTileBlockQueries * (sizeof(float) + std::size_t(topk) * sizeof(unsigned long long));
}

// KFOLD (k ≤ 12): the norm is the product's dimensions 12 and 13 and the folded threshold 14 and 15 (A:
// −folded as fp16 hi + lo, B: 1 and 1), the accumulators start from 0, and a pair costs nothing after the
// mma but its sign. Otherwise (k 13..16) each tile's accumulators start from its rows' norms less the
// folded thresholds, rounded down.
// SPLIT (a.splits > 1): the block takes split blockIdx.y of the chunk's stages, and its keys are
// merged with the other splits' through a.best (a separate instance: the unsplit one keeps its registers).
template <bool KFOLD, bool SPLIT>
__global__ void __launch_bounds__(kTileBlock, KFOLD ? kTileFoldBlocksPerSm : kTileBlocksPerSm) tile_kernel(TileArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) unsigned char shared[];
  constexpr int copies = KFOLD ? kStageLanes / 2 : kStageLanes;  // 16-byte pieces of a stage
  uint4* stage = reinterpret_cast<uint4*>(shared);                 // [2][copies]
  float* norm_low = reinterpret_cast<float*>(stage + 2 * copies);  // [512]
  int2* queues = reinterpret_cast<int2*>(norm_low + kTileBlockQueries);                              // [4][kQueue]
  unsigned long long* lists = reinterpret_cast<unsigned long long*>(queues + kTileWarps * kQueue);  // [512][topk]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t4 = lane & 3;
  const int block_first = blockIdx.x * kTileBlockQueries, topk = a.topk, dim = a.dim;
  // This block's stages of the chunk: split blockIdx.y of a.splits. With several splits every block's
  // improvements go to the queries' keys in global memory at once (below in enter).
  const int first_stage = SPLIT ? int((long long)a.stages * blockIdx.y / a.splits) : 0;
  const int end_stage = SPLIT ? int((long long)a.stages * (blockIdx.y + 1) / a.splits) : a.stages;
  const auto load = [&](int st, int buffer) {
    const uint4* from = a.packed + std::size_t(st) * copies;
    for (int i = threadIdx.x; i < copies; i += kTileBlock) copy16(stage + buffer * copies + i, from + i);
    asm volatile("cp.async.commit_group;\n" ::);
  };
  if (first_stage < end_stage) load(first_stage, 0);
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
    if (key < *reinterpret_cast<volatile unsigned long long*>(list + topk - 1)) {
      tc::offer(list, topk, key);
      // Split: the key goes to the query's keys in global memory, which every split lowers (topk 1:
      // atomicMin; longer lists: tc::offer's cascade), and what their last slot holds comes back into this
      // block's last slot, so the next refresh follows the other splits. That slot is then only a bound
      // (never below the final topk-th key, as either slot): a split block's list is never stored.
      if constexpr (SPLIT) {
        if (topk == 1) {
          const unsigned long long there = atomicMin(a.best + q, key);
          if (there < key) atomicMin(list, there);
        } else if (const unsigned long long last = tc::offer(a.best + std::size_t(q) * topk, topk, key); last != ~0ULL) {
          atomicMin(list + topk - 1, last);
        }
      }
    }
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
  for (int st = first_stage; st < end_stage; ++st) {
    const int buffer = (st - first_stage) & 1;
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();  // stage st is in for every thread, and every warp is done with the other buffer
    if (st + 1 < end_stage) load(st + 1, buffer ^ 1);
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
  // With several splits every improvement already went to a.best.
  if (!SPLIT) tc::store_lists(lists, a.best, block_first, kTileBlockQueries, a.m, topk);
#else
  __trap();  // the plan takes this kernel only on compute capability 8.0 and later
#endif
}

}  // namespace

std::size_t tile_device_bytes(const Problem& p, const TilePlan& plan) {
  const int largest = plan.chunk_rows.empty() ? p.n : largest_chunk(plan.chunk_rows);
  const std::size_t packed = std::size_t(tile_stages(largest)) * kStageBytes;
  return std::size_t(p.n) * p.dim * sizeof(float) + (p.self_join ? 0 : p.query_floats() * sizeof(float)) +
         p.result_slots() * (sizeof(std::int32_t) + sizeof(float)) + packed +
         std::size_t(p.m) * p.topk * sizeof(unsigned long long) + (p.topk > 1 ? PartialMerge::device_bytes(p.m, p.topk) : 0) + 8 +
         7 * cuda::StreamSlab::kAlign;  // the slab's pieces start on its boundaries
}

void tile_search(const Problem& p, const TilePlan& plan, Neighbors out, RunContext& ctx) {
  if (!plan.chosen) throw std::logic_error("tile_search: the plan did not choose the tile filter");
  const std::size_t shared = tile_shared_bytes(p.dim, p.topk);
  const bool fold_k = p.dim <= kTileFoldDims;
  const auto kernel_for = [&](bool split) {
    return fold_k ? (split ? tile_kernel<true, true> : tile_kernel<true, false>) : (split ? tile_kernel<false, true> : tile_kernel<false, false>);
  };
  for (bool split : {false, true})
    KNN_CUDA_TRY(cudaFuncSetAttribute(kernel_for(split), cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  cuda::Stream copy, search;
  const int chunks = plan.chunks();
  const int largest_stages = tile_stages(largest_chunk(plan.chunk_rows));
  // One allocation for every buffer of the call (calls of case 10's size take some 0.3 ms).
  float *references = nullptr, *own_queries = nullptr, *distances = nullptr;
  uint4* packed = nullptr;
  unsigned long long *best = nullptr, *counted = nullptr;
  std::int32_t* indices = nullptr;
  const cuda::StreamSlab slab(copy, {cuda::slab_part(references, std::size_t(p.n) * p.dim),
                                     cuda::slab_part(own_queries, p.self_join ? 0 : p.query_floats()),
                                     cuda::slab_part(packed, std::size_t(largest_stages) * kStageLanes),
                                     cuda::slab_part(best, std::size_t(p.m) * p.topk), cuda::slab_part(counted, 1),
                                     cuda::slab_part(indices, p.result_slots()), cuda::slab_part(distances, p.result_slots())});
  // topk 1's keys are each query's answer already; longer lists are sorted per query.
  std::optional<PartialMerge> merger;
  if (p.topk > 1) merger.emplace(p.m, p.topk, p.topk, copy, false);
  // Destroyed before the buffers (declared after them): on an exception, the kernels already queued on
  // the search stream finish before the copy stream frees what they read.
  const cuda::JoinOnUnwind join(search);

  TileArgs a{};
  a.queries = p.self_join ? references : own_queries;
  a.references = references;
  a.packed = packed;
  a.dim = p.dim, a.m = p.m, a.topk = p.topk, a.self_join = p.self_join;
  a.center = plan.center, a.scale = plan.scale, a.scale2 = plan.scale * plan.scale, a.band = plan.band;
  a.best = best, a.candidates = counted;
  scan::Args seed{};
  seed.queries = a.queries, seed.references = a.references, seed.dim = p.dim, seed.m = p.m, seed.topk = p.topk;
  seed.self_join = p.self_join, seed.best = best;

  cuda::Event start, search_start, searched, merged, done;
  std::vector<cuda::Event> copied(chunks);
  start.record(copy);
  KNN_CUDA_TRY(cudaStreamWaitEvent(search, start.get(), 0));
  fill_worst_keys(best, (long long)p.m * p.topk, search);
  KNN_CUDA_TRY(cudaMemsetAsync(counted, 0, sizeof(unsigned long long), search));
  if (!p.self_join)
    KNN_CUDA_TRY(cudaMemcpyAsync(own_queries, p.queries, p.query_floats() * sizeof(float), cudaMemcpyHostToDevice, copy));
  for (int c = 0; c < chunks; ++c) {
    const std::size_t first = std::size_t(plan.chunk_rows[c]) * p.dim;
    const std::size_t floats = std::size_t(plan.chunk_rows[c + 1] - plan.chunk_rows[c]) * p.dim;
    KNN_CUDA_TRY(cudaMemcpyAsync(references + first, p.references + first, floats * sizeof(float), cudaMemcpyHostToDevice, copy));
    copied[c].record(copy);
  }
  for (int c = 0; c < chunks; ++c) {
    KNN_CUDA_TRY(cudaStreamWaitEvent(search, copied[c].get(), 0));
    if (c == 0) search_start.record(search);
    a.row_begin = seed.row_begin = plan.chunk_rows[c], a.row_end = seed.row_end = plan.chunk_rows[c + 1];
    a.stages = tile_stages(a.row_end - a.row_begin);
    a.splits = plan.chunk_splits[c];
    if (c == 0) {  // the keys start from exact distances to 256 rows of the first chunk
      const long long threads = (long long)p.m * 32;
      tc::seed_kernel<><<<int((threads + tc::kSeedBlock - 1) / tc::kSeedBlock), tc::kSeedBlock, 0, search>>>(seed);
      KNN_CUDA_CHECK_LAUNCH();
    }
    const long long lanes = (long long)a.stages * kStageLanes;
    pack_kernel<><<<int((lanes + 255) / 256), 256, 0, search>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
    kernel_for(a.splits > 1)<<<dim3(plan.blocks, a.splits), kTileBlock, shared, search>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
  }
  searched.record(search);
  KNN_CUDA_TRY(cudaStreamWaitEvent(copy, searched.get(), 0));
  merger ? merger->enqueue_keys(best, indices, distances) : unpack_best(best, p.m, indices, distances, copy);
  merged.record(copy);
  cuda::download_answers(p, indices, distances, out, copy);
  done.record(copy);
  unsigned long long exact_count = 0;  // after the last timed event: no part of the answer
  KNN_CUDA_TRY(cudaMemcpyAsync(&exact_count, counted, sizeof exact_count, cudaMemcpyDeviceToHost, copy));
  copy.synchronize();

  report_chunk_phases(ctx.timing, start, copied[chunks - 1], search_start, searched, merged, done);
  ctx.path = tile_path_text(p, plan, exact_count, kQueue / 2, tc::kSeedRows);
}

}  // namespace knn::gpu
