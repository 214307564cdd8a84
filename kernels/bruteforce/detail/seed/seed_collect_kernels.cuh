#pragma once
// What the candidate buffers' kernels share (kernels/bruteforce/detail/seed/seed_collect.cu: CUDA cores;
// seed_collect_tc.cu: tensor cores): their arguments, the cut of a full buffer, and the
// tensor-core kernel's launch.
#include <cuda_runtime.h>

#include <cstdint>

namespace knn::gpu::collect {

struct Args {
  const float* __restrict__ queries;
  const float4* __restrict__ references;  // padded to a multiple of 4 rows
  const float* __restrict__ rows;         // the same, as floats
  int m, n, dim, topk, splits, capacity, query_groups;  // splits: buffers per query slot
  long long grid;
  bool balanced, self_join;
  float center, band;                      // the scores' (SCORE and the tensor cores)
  int row_splits;                          // tensor cores: blocks along the rows (4 buffers each)
  const std::int32_t* __restrict__ order;  // query slot -> query (the seed's Morton order)
  const float* __restrict__ bound;         // by query
  unsigned long long* keys;                // [(slot · splits + split) · capacity + e]
  int* counts;                             // [slot · splits + split]
  unsigned long long* stats;               // appended keys, cuts, then the gate's counts
  // The gate (seed_collect.hpp: kCollectTcGateLevel): where set, the kernel runs only if the
  // count at `gate` is at most gate_max (gate_tc) or above it (!gate_tc).
  const unsigned long long* gate;
  unsigned long long gate_max;
  bool gate_tc;
};

// Whether the gate lets this kernel run (every thread reads the same count).
__device__ __forceinline__ bool gate_open(const Args& a) {
  return a.gate == nullptr || ((*a.gate <= a.gate_max) == a.gate_tc);
}


// Moves `x` down the max-heap k[0..size) from `pos`.
__device__ __forceinline__ void sift(unsigned long long* k, int pos, int size, unsigned long long x) {
  for (;;) {
    int child = 2 * pos + 1;
    if (child >= size) break;
    if (child + 1 < size && k[child + 1] > k[child]) ++child;
    if (k[child] <= x) break;
    k[pos] = k[child];
    pos = child;
  }
  k[pos] = x;
}

// Cuts a full buffer back to its topk smallest keys (slots 0..topk-1, as a max-heap) and returns
// the largest of them's distance: a row of the same thread's later ones (larger indices) enters
// the answer only below it. Rare: only where the seed's bound let more than `capacity` rows in.
// Inlined: as a call it took the collecting kernel at k = 2 from 40 to 64 registers with one query
// per thread and from 48 to 96 with two (the registers kept across the call), and case 200 took
// 13.6 ms on an H200 (results/h200/v15/collect-call/) against 12.3-12.5 inlined on an H100.
__device__ __forceinline__ float cut(unsigned long long* k, int capacity, int topk) {
  for (int i = topk / 2 - 1; i >= 0; --i) sift(k, i, topk, k[i]);
  for (int j = topk; j < capacity; ++j)
    if (k[j] < k[0]) sift(k, 0, topk, k[j]);
  return __uint_as_float(unsigned(k[0] >> 32));
}

// The tensor-core collecting kernel over the grid of `blocks` (query groups of kTcBlockQueries ×
// a.row_splits), TF32 scores (split: hi + lo, three products) on a.dim <= 8.
void launch_collect_tc(const Args& a, long long blocks, bool split, cudaStream_t stream);

}  // namespace knn::gpu::collect
