#pragma once
// One wave of v16's search (v16_gpu_kdtree.cu runs the waves): every active (leaf, query) key scans its
// leaf, then walks the tree to its next leaf (kdtree_gpu_walk.cuh). Two kernels:
//  * search_kernel, any topk: one thread per key, the query's top-k heap in shared memory
//    (shared_topk.cuh), taken up from the answer row at the start of a wave; leaves optionally staged.
//    A key may have L = 2, 4 or 8 lanes of one warp (kdtree_gpu_walk.cuh, scan_lanes): each lane
//    scores every L-th group of the leaf, a row closer than the K-th goes to all L lanes, and each
//    lane puts it into its own copy of the heap. The copies stay identical, so the lanes walk to the
//    same next leaf. A small wave, and the last kernel's few long-running queries, then keep L times
//    the threads busy, each waiting on 1/L of the leaf's rows.
//  * nearest_kernel, topk = 1 for queries that are not their own references: the best (distance,
//    index) pair stays in registers. A row that comes closer replaces it by two selects (no branch, so
//    the lanes of a warp do not split on it, as they do on a heap insertion); the row's index is read
//    only on an exact distance tie and once per leaf. A query may be scanned by L lanes of one warp
//    (L = 1, 2, 4 or 8): each lane takes every L-th float4 group of the leaf, the L bests meet by
//    shuffles, and every lane walks to the same next leaf, so a small wave keeps the GPU busy with L
//    times the threads and 1/L of each leaf per thread.
// Both keep v0's order: the smaller distance, then the smaller index; +inf and NaN never enter, and
// padding rows (index -1, coordinates at +inf) never win.
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <cstddef>
#include <cstdint>

#include "kernels/device/shared_topk.cuh"
#include "kernels/device/warp_reduce.cuh"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_tc.cuh"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_walk.cuh"

namespace knn::kd {

constexpr int kWaveBlock = 128;  // threads per block of both kernels

// One wave's work (v16_gpu_kdtree.cu launches it for both the heap and the register kernels).
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
  // v16.answers=direct (the heap kernel only): the pinned output's device addresses, where each
  // block writes its finished queries' rows; null: the rows are copied after the search.
  std::int32_t* host_idx = nullptr;
  float* host_dist = nullptr;
  // v16.readback=lag: `count` only sizes the grid, and the wave's active queries are read here (the
  // last wave's `remaining`, on the device). `guard` makes the launch one of a pair: 1 runs where that
  // count is at least `split` (a sorted wave), 2 where it is below (the last kernel), 0 always.
  const unsigned* count_in = nullptr;
  int guard = 0;
  unsigned split = 0;
  // v16.first_batch (the first wave, at one lane a key, leaf rows from global memory): the rows closer
  // than the K-th go into a per-thread buffer of `batch` slots in shared memory, and into the heap after
  // every `batch` rows, by every lane of the warp at once (search_kernel<DIM, 1, true>); 0: each row
  // into the heap as it is found.
  int batch = 0;
  // v16.tc (a sorted wave, one lane a key; search_kernel<DIM, 1, false, true>, or search_kernel_capped<DIM, 8> with
  // tc_regs64): a warp whose 32 keys sit on at most tc.max_leaves leaves and whose heaps are full scans them on the
  // tensor cores (kdtree_gpu_tc.cuh).
  TcRows tc;
  bool tc_regs64 = false;  // v16.tc_regs=64: that kernel compiled for 8 blocks an SM (at most 64 registers a thread)
  // v16.tail_queue (the last kernel at 32 lanes a query, kdtree_gpu_tail.cuh): the counter its warps take their next
  // query from, zeroed before each launch; null: search_kernel, one query a warp.
  unsigned* claimed = nullptr;
};

// The wave's active queries into `count`; false: the launch is the other half of its pair (the
// same on every thread, so the whole grid returns at once).
__device__ __forceinline__ bool wave_count(const SearchArgs& a, int& count) {
  count = a.count;
  if (a.count_in == nullptr) return true;
  const unsigned c = *a.count_in;
  count = int(c);
  return a.guard == 0 || (a.guard == 1) == (c >= a.split);
}


// A query's heap (this thread's slots d, i at a stride of kWaveBlock) as its wave starts: empty in the first wave, else
// the heap that waited in its answer row (row_d, row_i).
__device__ __forceinline__ void open_heap(const SearchArgs& a, knn::gpu::SharedTopK& list, float* d, std::int32_t* i, const float* row_d,
                                          const std::int32_t* row_i) {
  if (a.first) return list.clear();
  for (int s = 0; s < a.topk; ++s) d[s * kWaveBlock] = row_d[s], i[s * kWaveBlock] = row_i[s];
  list.resume();
}

// L threads per active key (blocks of kWaveBlock / L consecutive keys): scan the leaf, find the next one.
// Leaves are staged with L = 1 only.
// The last kernel (v16.tail_lanes) also takes 16 and 32: a query's long chain of leaves split over more lanes.
// search_body is search_kernel's body, shared with search_kernel_capped below.
template <int DIM, int L, bool HOLD = false, bool TC = false>
__device__ __forceinline__ void search_body(const SearchArgs& a) {
  static_assert(L == 1 || L == 2 || L == 4 || L == 8 || L == 16 || L == 32, "lanes per query: 1, 2, 4, 8, 16 or 32");
  using Scan = cub::BlockScan<int, kWaveBlock>;
  __shared__ typename Scan::TempStorage scan_temp;
  __shared__ int leaf_of[kWaveBlock], run_leaf[kWaveBlock];
  extern __shared__ __align__(16) float smem[];
  const TreeView& t = a.t;
  const int dim = DIM > 0 ? DIM : t.dim, tid = threadIdx.x, S = t.leaf_size;
  const int stride = DIM > 0 ? (DIM + 3) / 4 * 4 : dim;  // staged row stride: float4 loads when compiled in
  float* heap_d = smem;
  auto* heap_i = reinterpret_cast<std::int32_t*>(heap_d + std::size_t(a.topk) * kWaveBlock);
  float* tile = reinterpret_cast<float*>(heap_i + std::size_t(a.topk) * kWaveBlock);
  auto* tile_index = reinterpret_cast<std::int32_t*>(tile + std::size_t(a.stage_leaves) * S * stride);
  float* held_d = reinterpret_cast<float*>(tile_index + std::size_t(a.stage_leaves) * S);  // v16.first_batch's buffer, slot-major
  auto* held_r = reinterpret_cast<int*>(held_d + std::size_t(a.batch) * kWaveBlock);

  int count;
  if (!wave_count(a, count) || int(blockIdx.x) * (kWaveBlock / L) >= count) return;  // uniform per block
  const int thread = blockIdx.x * kWaveBlock + tid, item = thread / L, lane = thread % L;
  [[maybe_unused]] const unsigned mask = L == 32 ? 0xffffffffu : ((1u << (L % 32)) - 1) << ((tid & 31) & ~(L - 1));  // the key's lanes
  const bool active = item < count;
  const std::uint64_t key = active ? a.keys_in[item] : 0;
  int leaf = active ? int(key >> 32) : -1;
  const int qid = int(unsigned(key));
  // The block's distinct leaves (runs of equal keys when sorted): staged when they fit.
  int run = 0, runs = 0;
  if (L == 1 && a.stage_leaves > 0) {
    leaf_of[tid] = leaf;
    __syncthreads();
    const int start = active && (tid == 0 || leaf_of[tid - 1] != leaf) ? 1 : 0;
    Scan(scan_temp).ExclusiveSum(start, run, runs);
    run += start - 1;
    if (start) run_leaf[run] = leaf;
    __syncthreads();
  }
  const bool staged = L == 1 && a.stage_leaves > 0 && runs <= a.stage_leaves;
  if (staged) {
    const int floats = S * stride;
    for (int e = tid; e < runs * floats; e += kWaveBlock) {
      const int k = e % stride, row = run_leaf[e / floats] * S + (e % floats) / stride;
      tile[e] = k < dim ? __ldg(t.points + std::size_t(row) * dim + k) : 0.f;
    }
    for (int e = tid; e < runs * S; e += kWaveBlock) tile_index[e] = __ldg(t.index + std::size_t(run_leaf[e / S]) * S + e % S);
    __syncthreads();
  }
  // TC: the warp's keys all active and on at most tc.max_leaves leaves, counted as runs of equal leaves (decided
  // here, where every lane of the warp is present; the shuffle outside the condition, which inactive lanes would skip).
  bool warp_tc = false;
  if constexpr (TC) {
    const int before = __shfl_up_sync(0xffffffffu, leaf, 1);
    const int runs_here = __popc(__ballot_sync(0xffffffffu, (tid & 31) == 0 || leaf != before));
    warp_tc = !staged && !a.to_end && __all_sync(0xffffffffu, active) && runs_here <= a.tc.max_leaves;
  }
  knn::gpu::SharedTopK list(heap_d + tid, heap_i + tid, kWaveBlock, a.topk);
  unsigned visited = 0;
  int next = -1;
  if (active) {
    Query<DIM> q;
    q.load(a.queries + std::size_t(qid) * dim, dim);
    std::int32_t* row_i = a.heap_idx + std::size_t(qid) * a.topk;
    float* row_d = a.heap_dist + std::size_t(qid) * a.topk;
    open_heap(a, list, heap_d + tid, heap_i + tid, row_d, row_i);
    bool from_tile = staged;
    for (;;) {
      if (from_tile) {
        const float* rows = tile + std::size_t(run) * S * stride;
        const std::int32_t* ids = tile_index + std::size_t(run) * S;
        for (int r = 0; r < S; ++r) {
          const float d = staged_distance(q, rows + std::size_t(r) * stride, dim);
          const std::int32_t id = ids[r];
          if (id >= 0 && !(a.self_join && id == qid)) list.offer(d, id);
        }
      } else {
        const auto take = [&](float d, int r) {  // the index is read only for a candidate
          const std::int32_t id = __ldg(t.index + r);
          if (id >= 0 && !(a.self_join && id == qid)) list.offer(d, id);
        };
        if constexpr (L == 1) {
          if constexpr (HOLD) {
            // A heap insertion splits the warp: the lanes that found nothing wait for it. In the first
            // wave every heap fills (about 25 insertions a query at topk 5, 4-5 lanes of 32 active on
            // them). Held back and put in after every `batch` rows, the lanes' insertions run side by side.
            int held = 0;
            scan_share<DIM, 1, true>(
                t, q, leaf, 0, a.vec == 1,
                [&](float d, int r) {
                  if (d <= list.worst_distance()) held_d[held * kWaveBlock + tid] = d, held_r[held * kWaveBlock + tid] = r, ++held;
                },
                a.batch, [&] {
                  for (int j = 0; j < held; ++j) take(held_d[j * kWaveBlock + tid], held_r[j * kWaveBlock + tid]);
                  held = 0;
                });
          } else {
            bool done = false;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
            if constexpr (TC && DIM > 0 && DIM <= gpu::kTileFoldDims)  // every lane of the warp is here when warp_tc
              if (warp_tc && __all_sync(0xffffffffu, list.worst_distance() < INFINITY)) {
                for (unsigned todo = 0xffffffffu; todo != 0;) {  // the warp's leaves one after another
                  const int on = __shfl_sync(0xffffffffu, leaf, __ffs(todo) - 1);
                  const unsigned members = __ballot_sync(0xffffffffu, leaf == on);
                  todo &= ~members;
                  tc_scan_leaf<DIM>(t, a.tc, a.queries + std::size_t(qid) * dim, q, on, members, list, take);
                }
                done = true;
              }
#endif
            if (!done)
              scan_share<DIM, 1>(t, q, leaf, 0, a.vec == 1, [&](float d, int r) {
                if (d <= list.worst_distance()) take(d, r);
              });
          }
        } else {
          scan_lanes<DIM, L>(t, q, leaf, lane, a.vec == 1, mask, [&] { return list.worst_distance(); }, take);
        }
      }
      ++visited;
      next = next_leaf(t, q, leaf, list.worst_distance(), a.box);
      if (!a.to_end || next < 0) break;
      leaf = next;
      from_tile = false;
    }
    if (lane != 0) {
      // the key's lanes hold the same heap: lane 0 writes it
    } else if (next < 0) {
      list.store(row_i, row_d);
      a.keys_out[item] = (std::uint64_t(t.leaves) << 32) | unsigned(qid);
    } else {
      for (int s = 0; s < a.topk; ++s) row_d[s] = heap_d[s * kWaveBlock + tid], row_i[s] = heap_i[s * kWaveBlock + tid];
      a.keys_out[item] = (std::uint64_t(next) << 32) | unsigned(qid);
    }
  }
  if (a.host_idx != nullptr) {
    // answers=direct: the block's finished rows, just stored by their threads (visible to the whole
    // block after the barrier; no other block writes them), go on to the pinned output. Consecutive
    // threads take consecutive slots of one row (a row's topk slots are contiguous there).
    __shared__ int done[kWaveBlock];
    __shared__ int done_count;
    if (tid == 0) done_count = 0;
    __syncthreads();
    if (active && lane == 0 && next < 0) done[atomicAdd(&done_count, 1)] = qid;
    __syncthreads();
    const int slots = done_count * a.topk;
    for (int e = tid; e < slots; e += kWaveBlock) {
      const std::size_t at = std::size_t(done[e / a.topk]) * a.topk + e % a.topk;
      a.host_idx[at] = a.heap_idx[at];
      a.host_dist[at] = a.heap_dist[at];
    }
  }
  const unsigned going = __popc(__ballot_sync(0xffffffffu, lane == 0 && next >= 0));
  const unsigned seen = knn::gpu::warp::sum(lane == 0 ? visited : 0u);
  if ((tid & 31) == 0) {
    if (going) atomicAdd(a.remaining, going);
    if (seen) atomicAdd(a.visits, (unsigned long long)seen);
  }
}

template <int DIM, int L, bool HOLD = false, bool TC = false>
__global__ void __launch_bounds__(kWaveBlock) search_kernel(const SearchArgs a) {
  search_body<DIM, L, HOLD, TC>(a);
}
// v16.tc_regs=64: the tensor-core wave kernel compiled for MINB = 8 blocks an SM, so at most 64 registers a thread (the
// compiler gives search_kernel<9, 1, false, true> 72, which leaves room for 7 blocks; at 10 blocks, 48 registers, it spills
// 100 bytes and lost on an H200: docs/v16.md).
template <int DIM, int MINB>
__global__ void __launch_bounds__(kWaveBlock, MINB) search_kernel_capped(const SearchArgs a) {
  search_body<DIM, 1, false, true>(a);
}

// answers=early: the rows of the `count` queries of `keys` (those a wave ran when the bulk copy of
// every row began, whose device rows later waves rewrote) written again into the pinned output, once
// the copy and the search are both done. Consecutive threads take consecutive slots of one row.
__global__ void rewrite_rows_kernel(const std::uint64_t* __restrict__ keys, int count, int topk, const std::int32_t* __restrict__ idx,
                                    const float* __restrict__ dist, std::int32_t* host_idx, float* host_dist) {
  const long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (e >= (long long)count * topk) return;
  const std::size_t at = std::size_t(unsigned(keys[e / topk])) * topk + std::size_t(e % topk);
  host_idx[at] = idx[at];
  host_dist[at] = dist[at];
}

// A wave's count of remaining queries stored into pinned host memory by a kernel rather than copied
// (answers=early: the copy engine is then busy with the answers); visible to the host once an event
// after this kernel has completed.
__global__ void publish_count_kernel(const unsigned* count, volatile unsigned* host) { *host = *count; }

// The best pair so far: its distance and either the tree row it came from (row >= 0; the index is
// read when needed) or, with row < 0, its index `id` (the pair the query came into the wave with).
struct Best {
  float d = INFINITY;
  std::int32_t id = -1;
  int row = -1;

  __device__ __forceinline__ std::int32_t index(const std::int32_t* ids) const { return row >= 0 ? __ldg(ids + row) : id; }

  // Tree row r at distance dr, the full rule: closer wins; on an exact tie the smaller real index.
  __device__ __forceinline__ void offer(float dr, int r, const std::int32_t* __restrict__ ids) {
    const bool closer = dr < d, tie = dr == d;
    d = closer ? dr : d;
    row = closer ? r : row;
    if (tie) {
      const std::int32_t i = __ldg(ids + r);
      if (i >= 0 && i < index(ids)) row = r;
    }
  }

  // The fast rule: closer wins by two selects, and `tied` records an exact tie with the best of the
  // moment (the scan then runs again with offer()). Without a tie one pair holds the least distance
  // alone, and the strict rule finds it in any order.
  __device__ __forceinline__ void offer_closer(float dr, int r, bool& tied) {
    tied = tied || dr == d;
    const bool closer = dr < d;
    d = closer ? dr : d;
    row = closer ? r : row;
  }

  // The index read, then the smallest pair of the L lanes (a group of L lanes of one warp, `mask`),
  // the same on every lane of the group.
  template <int L>
  __device__ __forceinline__ void gather(const std::int32_t* ids, unsigned mask) {
    id = index(ids);
    row = -1;
#pragma unroll
    for (int s = L / 2; s > 0; s >>= 1) {
      const float od = __shfl_xor_sync(mask, d, s);
      const std::int32_t oi = __shfl_xor_sync(mask, id, s);
      if (od < d || (od == d && oi < id)) d = od, id = oi;
    }
  }
};

// The lane's share of the leaf into `b`: the fast rule, and the full rule again from the same start
// where a distance tied.
template <int DIM, int L>
__device__ __forceinline__ void scan_nearest(const TreeView& t, const Query<DIM>& q, int leaf, int lane, bool vec, Best& b) {
  const Best start = b;
  bool tied = false;
  scan_share<DIM, L>(t, q, leaf, lane, vec, [&](float d, int r) { b.offer_closer(d, r, tied); });
  if (!tied) return;
  b = start;
  scan_share<DIM, L>(t, q, leaf, lane, vec, [&](float d, int r) { b.offer(d, r, t.index); });
}

// One thread per (query, lane): L consecutive threads share a key. The pair waits in the answer row
// between waves (topk = 1: the row is the pair).
template <int DIM, int L>
__global__ void __launch_bounds__(kWaveBlock) nearest_kernel(const SearchArgs a) {
  static_assert(L == 1 || L == 2 || L == 4 || L == 8, "lanes per query: 1, 2, 4 or 8");
  const TreeView& t = a.t;
  const int thread = blockIdx.x * blockDim.x + threadIdx.x, item = thread / L, lane = thread % L;
  const unsigned mask = L == 1 ? 1u << (threadIdx.x & 31) : ((1u << L) - 1) << ((threadIdx.x & 31) & ~(L - 1));
  int count;
  if (!wave_count(a, count) || int(blockIdx.x) * (kWaveBlock / L) >= count) return;  // uniform per block
  unsigned visited = 0;
  int next = -1;
  if (item < count) {
    const std::uint64_t key = a.keys_in[item];
    int leaf = int(key >> 32);
    const int qid = int(unsigned(key));
    const int dim = DIM > 0 ? DIM : t.dim;
    Query<DIM> q;
    q.load(a.queries + std::size_t(qid) * dim, dim);
    Best b;
    if (!a.first) b.d = a.heap_dist[qid], b.id = a.heap_idx[qid];
    for (;;) {
      scan_nearest<DIM, L>(t, q, leaf, lane, a.vec == 1, b);
      b.gather<L>(t.index, mask);
      ++visited;
      next = next_leaf(t, q, leaf, b.d, a.box);
      if (!a.to_end || next < 0) break;
      leaf = next;
    }
    if (lane == 0) {
      a.heap_dist[qid] = b.d;
      a.heap_idx[qid] = b.id;
      a.keys_out[item] = (std::uint64_t(next < 0 ? t.leaves : next) << 32) | unsigned(qid);
    }
  }
  const unsigned going = __popc(__ballot_sync(0xffffffffu, lane == 0 && next >= 0));
  const unsigned seen = knn::gpu::warp::sum(lane == 0 ? visited : 0u);
  if ((threadIdx.x & 31) == 0) {
    if (going) atomicAdd(a.remaining, going);
    if (seen) atomicAdd(a.visits, (unsigned long long)seen);
  }
}

}  // namespace knn::kd
