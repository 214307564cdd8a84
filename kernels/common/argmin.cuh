#pragma once
// Device helpers shared by the GPU argmin versions: the (distance, index) order, the distance
// arithmetic, one thread's scan over references, and the warp and block reductions.
//
// Tie rule (v0's): among equal minimum distances the smallest index wins. A thread scans its
// references in increasing index order with a strict `<`, so it keeps its first minimum; every
// reduction after that compares (distance, index) lexicographically, which is associative and
// commutative, so the order in which threads, blocks or GPUs are combined does not matter.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/common/candidate.hpp"

namespace knn::gpu {

__device__ __forceinline__ Candidate no_candidate() { return {INFINITY, kNoIndex}; }

// True when a comes before b: smaller distance, or equal distance and smaller index (v0's order;
// also the host's second-level reduction in multiblock.cu).
__host__ __device__ __forceinline__ bool precedes(const Candidate& a, const Candidate& b) {
  return a.distance < b.distance || (a.distance == b.distance && a.index < b.index);
}

// ---------------------------------------------------------------- operands

// A query row in global memory, read through the read-only cache (every thread of a block reads
// the same address, which the cache broadcasts).
struct GlobalQuery {
  const float* values;
  __device__ __forceinline__ float operator()(int t) const { return __ldg(values + t); }
};

// A query row staged in shared memory by with_block_query (every thread reads the same word: a
// broadcast, no bank conflict).
struct SharedQuery {
  const float* values;
  __device__ __forceinline__ float operator()(int t) const { return values[t]; }
};

inline constexpr int kSharedQueryFloats = 1024;

// Runs body(query) with the block's query row copied once into shared memory, instead of one
// read-only-cache load per reference and dimension; rows longer than kSharedQueryFloats are read
// from global memory. Every thread of the block must call it (dim is the same for all).
template <class Body>
__device__ __forceinline__ void with_block_query(const float* row, int dim, Body&& body) {
  __shared__ float s_query[kSharedQueryFloats];
  if (dim <= kSharedQueryFloats) {
    for (int t = threadIdx.x; t < dim; t += blockDim.x) s_query[t] = row[t];
    __syncthreads();
    body(SharedQuery{s_query});
  } else {
    body(GlobalQuery{row});
  }
}

// References as stored by the harness: row-major n × dim (array of structures).
struct AosReferences {
  const float* values;
  int dim;
  __device__ __forceinline__ float operator()(long long j, int t) const { return __ldg(values + j * dim + t); }
};

// References transposed to dim × ld (structure of arrays): dimension t of all references is
// contiguous, so a warp reading dimension t of 32 consecutive references makes one coalesced load.
struct SoaReferences {
  const float* values;
  long long ld;
  __device__ __forceinline__ float operator()(long long j, int t) const { return __ldg(values + t * ld + j); }
};

// Squared Euclidean distance of the query to reference j, accumulated in float in dimension order
// (v0's arithmetic; the compiler may contract each step into an fma).
template <class Query, class References>
__device__ __forceinline__ float squared_distance(int dim, const Query& query, const References& references,
                                                  long long j) {
  float sum = 0.f;
  for (int t = 0; t < dim; ++t) {
    const float diff = query(t) - references(j, t);
    sum += diff * diff;
  }
  return sum;
}

// One thread's share of a scan: positions begin, begin + stride, ... below end, in increasing order,
// each recorded as reference index_offset + position. The strict `<` keeps the first of equal
// distances; `best` carries over from earlier calls that covered smaller indices.
template <class DistanceAt>
__device__ __forceinline__ Candidate scan_references(Candidate best, long long begin, long long end, long long stride,
                                                     long long index_offset, DistanceAt distance_at) {
  for (long long pos = begin; pos < end; pos += stride) {
    const float d = distance_at(pos);
    if (d < best.distance) best = {d, static_cast<std::int32_t>(index_offset + pos)};
  }
  return best;
}

// ---------------------------------------------------------------- reductions

// Every lane ends with the warp's first (distance, index). Needs all 32 lanes.
__device__ __forceinline__ Candidate warp_argmin(Candidate c) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Candidate other{__shfl_xor_sync(0xffffffffu, c.distance, offset),
                          __shfl_xor_sync(0xffffffffu, c.index, offset)};
    if (precedes(other, c)) c = other;
  }
  return c;
}

// One step of the shared-memory tree: thread t (< offset) takes slot t + offset when it comes first.
__device__ __forceinline__ void tree_step(Candidate& c, int offset, float* s_distance, std::int32_t* s_index) {
  const int t = threadIdx.x;
  if (t < offset) {
    const Candidate other{s_distance[t + offset], s_index[t + offset]};
    if (precedes(other, c)) {
      c = other;
      s_distance[t] = c.distance;
      s_index[t] = c.index;
    }
  }
}

// The seeds' block tree: log2(blockDim.x) shared-memory steps with a barrier after each, the loop
// bound read at run time. blockDim.x must be a power of two; shared arrays hold blockDim.x entries.
// The result is valid in thread 0. Ends on a barrier, so the arrays may be reused at once.
__device__ __forceinline__ Candidate block_argmin_tree(Candidate c, float* s_distance, std::int32_t* s_index) {
  s_distance[threadIdx.x] = c.distance;
  s_index[threadIdx.x] = c.index;
  __syncthreads();
#pragma unroll 1
  for (int offset = blockDim.x / 2; offset > 0; offset >>= 1) {
    tree_step(c, offset, s_distance, s_index);
    __syncthreads();
  }
  return c;
}

// v9's block reduction: the block size is a compile-time constant, so the shared steps down to
// two warps are unrolled, and the last 32 candidates are reduced by warp 0 with shuffles (no
// barriers). Must be launched with exactly kThreads threads. The result is valid in thread 0.
// No trailing barrier: callers that reuse the arrays must synchronise first.
template <int kThreads>
__device__ __forceinline__ Candidate block_argmin_unrolled(Candidate c, float* s_distance, std::int32_t* s_index) {
  static_assert(kThreads >= 32 && kThreads <= 1024 && (kThreads & (kThreads - 1)) == 0,
                "kThreads must be a power of two in [32, 1024]");
  if constexpr (kThreads > 32) {
    s_distance[threadIdx.x] = c.distance;
    s_index[threadIdx.x] = c.index;
    __syncthreads();
#pragma unroll
    for (int offset = kThreads / 2; offset >= 32; offset >>= 1) {
      tree_step(c, offset, s_distance, s_index);
      if (offset > 32) __syncthreads();  // after the step at 32, warp 0 holds everything in registers
    }
  }
  if (threadIdx.x < 32) c = warp_argmin(c);
  return c;
}

// ---------------------------------------------------------------- answers

// Writes query q's answer: v0 answers index 0 with an infinite distance when nothing was finite.
__device__ __forceinline__ void store_answer(const Candidate& c, long long q, std::int32_t* indices,
                                             float* distances) {
  indices[q] = c.index == kNoIndex ? 0 : c.index;
  distances[q] = c.distance;
}

// The end of every one-block-per-query kernel (v1's reduction, v3–v6): the block tree over the
// threads' candidates, then thread 0 stores query q's answer. Needs kSearchThreads threads.
__device__ __forceinline__ void block_store_answer(Candidate c, long long q, std::int32_t* indices,
                                                   float* distances) {
  __shared__ float s_distance[kSearchThreads];
  __shared__ std::int32_t s_index[kSearchThreads];
  c = block_argmin_tree(c, s_distance, s_index);
  if (threadIdx.x == 0) store_answer(c, q, indices, distances);
}

// The whole body of a one-block-per-query kernel (v3–v6): each thread scans references threadIdx.x,
// +blockDim.x, ... for the query, then the block tree picks the answer for query q.
template <class Query, class References>
__device__ __forceinline__ void block_answers_query(int dim, int n, const Query& query, const References& references,
                                                    long long q, std::int32_t* indices, float* distances) {
  const Candidate c = scan_references(no_candidate(), threadIdx.x, n, blockDim.x, 0,
                                      [&](long long j) { return squared_distance(dim, query, references, j); });
  block_store_answer(c, q, indices, distances);
}

}  // namespace knn::gpu
