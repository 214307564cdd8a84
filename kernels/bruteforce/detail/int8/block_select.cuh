#pragma once
// One block selects one query's topk smallest keys out of a row of n candidates computed on the
// fly. A key packs (distance, index) as distance << 32 | index, so the unsigned order of keys is
// knn::before's order and every key of a row is distinct. The block keeps the best topk keys sorted
// in shared memory; the row is read in tiles of kSelectTile candidates, and a candidate enters a
// shared buffer only when it beats the worst kept key (a register copy of it). After a tile that
// gave candidates, the buffer is sorted (a bitonic sort of the next power of two) and merged with
// the kept keys by rank: a kept key's new place is its old one plus the number of candidates
// before it, and the other way round. Into an empty list (no carried keys), the first tile admits
// only keys up to a bound from the threads' minima (select_row); then, in a random order of
// candidates, ever fewer enter (about topk · tile / seen per tile), so most tiles cost one read,
// one compare and one ballot per candidate.
#include <cuda_runtime.h>

#include <cstdint>

namespace knn::gpu::select {

constexpr int kSelectThreads = 256;
constexpr int kSelectItems = 8;
constexpr int kSelectTile = kSelectThreads * kSelectItems;  // a power of two
constexpr unsigned long long kNoKey = ~0ull;                // an empty slot: after every real key

// Shared bytes for a block keeping `topk` keys.
constexpr std::size_t shared_bytes(int topk) {
  return (2 * std::size_t(topk) + kSelectTile) * sizeof(unsigned long long);
}

__device__ __forceinline__ unsigned long long pack(std::uint32_t distance, std::int32_t index) {
  return (static_cast<unsigned long long>(distance) << 32) | static_cast<std::uint32_t>(index);
}

// Keys of `sorted[0, count)` before `key` (strictly).
__device__ __forceinline__ int rank_in(const unsigned long long* sorted, int count, unsigned long long key) {
  int lo = 0, hi = count;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (sorted[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Sorts buf[0, count) ascending in place; buf has room for the next power of two (≤ kSelectTile).
__device__ void sort_block(unsigned long long* buf, int count) {
  int size = 1;
  while (size < count) size <<= 1;
  for (int i = count + threadIdx.x; i < size; i += blockDim.x) buf[i] = kNoKey;
  __syncthreads();
  for (int span = 2; span <= size; span <<= 1)
    for (int stride = span >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < size / 2; i += blockDim.x) {
        const int lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
        const bool ascending = (lo & span) == 0;
        const unsigned long long a = buf[lo], b = buf[hi];
        if ((a > b) == ascending) buf[lo] = b, buf[hi] = a;
      }
      __syncthreads();
    }
}

// `tile_keys(base, keys, takes)` writes the keys of the tile's kSelectTile candidates [base, base +
// kSelectTile), kSelectItems a thread, in any order that covers each candidate once; takes[i] is false
// for an item past n and for a candidate to leave out (the query itself in a self-join). The kept keys start as `carried[0, topk)` (the
// best of the rows searched before, sorted; nullptr: none). With `keys_out` the topk best keys are
// written there, sorted (it may be `carried`: each block reads its own before it writes); without,
// as (index, distance), ascending, and slots nothing filled read (-1, +inf), as v0 leaves them
// (v0's topk = 1 loop: (0, +inf)). Launch with kSelectThreads threads and shared_bytes(topk) of
// dynamic shared memory.
template <typename TileKeys>
__device__ void select_row(int n, int topk, TileKeys tile_keys, const unsigned long long* carried, unsigned long long* keys_out,
                           std::int32_t* out_index, float* out_distance) {
  extern __shared__ unsigned long long shared_keys[];
  __shared__ int count;
  unsigned long long* kept = shared_keys;
  unsigned long long* next = kept + topk;
  unsigned long long* cand = next + topk;
  for (int s = threadIdx.x; s < topk; s += blockDim.x) kept[s] = carried != nullptr ? carried[s] : kNoKey;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  unsigned long long worst = kept[topk - 1];  // in every thread
  const int lane = threadIdx.x & 31;
  for (int base = 0; base < n; base += kSelectTile) {
    // Every item's key first, then the ballots: the tile's loads are all in flight at once.
    unsigned long long keys[kSelectItems];
    bool takes[kSelectItems];
    tile_keys(base, keys, takes);
    if (base == 0 && carried == nullptr && topk <= kSelectThreads) {
      // Every key of the first tile would enter an empty list (a sort of kSelectTile keys in shared
      // memory). A bound first: the topk-th smallest of the threads' own minima. Those are topk real,
      // distinct candidates, so the topk best are all at most it, and only keys up to it enter.
      unsigned long long own = kNoKey;
#pragma unroll
      for (int item = 0; item < kSelectItems; ++item)
        if (takes[item] && keys[item] < own) own = keys[item];
      cand[threadIdx.x] = own;
      sort_block(cand, kSelectThreads);  // synchronises before and after
      const unsigned long long bound = cand[topk - 1];
      __syncthreads();  // cand holds the candidates next
      if (bound != kNoKey) worst = bound + 1;
    }
#pragma unroll
    for (int item = 0; item < kSelectItems; ++item) {
      const unsigned long long key = keys[item];
      const bool take = takes[item] && key < worst;
      const unsigned mask = __ballot_sync(0xffffffffu, take);
      if (mask == 0) continue;
      const int leader = __ffs(mask) - 1;
      int slot = 0;
      if (lane == leader) slot = atomicAdd(&count, __popc(mask));
      slot = __shfl_sync(0xffffffffu, slot, leader);
      if (take) cand[slot + __popc(mask & ((1u << lane) - 1u))] = key;
    }
    __syncthreads();
    const int found = count;
    if (found > 0) {  // the same in every thread
      sort_block(cand, found);
      for (int s = threadIdx.x; s < topk; s += blockDim.x) {
        const int at = s + rank_in(cand, found, kept[s]);
        if (at < topk) next[at] = kept[s];
      }
      for (int c = threadIdx.x; c < found; c += blockDim.x) {
        const int at = c + rank_in(kept, topk, cand[c]);
        if (at < topk) next[at] = cand[c];
      }
      __syncthreads();
      unsigned long long* old = kept;
      kept = next, next = old;
      worst = kept[topk - 1];
      if (threadIdx.x == 0) count = 0;
    }
    __syncthreads();
  }
  for (int s = threadIdx.x; s < topk; s += blockDim.x) {
    const unsigned long long key = kept[s];
    if (keys_out != nullptr) {
      keys_out[s] = key;
      continue;
    }
    out_index[s] = key != kNoKey ? static_cast<std::int32_t>(key & 0xffffffffu) : topk == 1 ? 0 : -1;
    out_distance[s] = key == kNoKey ? INFINITY : static_cast<float>(static_cast<std::uint32_t>(key >> 32));
  }
}

}  // namespace knn::gpu::select
