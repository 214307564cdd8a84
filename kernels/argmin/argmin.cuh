#pragma once
// Device helpers shared by the GPU argmin versions: the distance arithmetic, one thread's scan over
// references, and the warp and block reductions.
//
// Tie rule (v0's): among equal minimum distances the smallest index wins. A thread scans its
// references in increasing index order with a strict `<`, so it keeps its first minimum; every
// reduction after that compares (distance, index) lexicographically, which is associative and
// commutative, so the order in which threads, blocks or GPUs are combined does not matter. The
// order itself (precedes, knn::before) and the answer a candidate gives are in candidate.hpp.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/argmin/candidate.hpp"

namespace knn::gpu {

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

// The end of every one-block-per-query kernel (v1's reduction, v3–v6): the block tree over the
// threads' candidates, then thread 0 stores query q's answer. Needs kThreads threads.
template <int kThreads = kSearchThreads>
__device__ __forceinline__ void block_store_answer(Candidate c, long long q, std::int32_t* indices,
                                                   float* distances) {
  __shared__ float s_distance[kThreads];
  __shared__ std::int32_t s_index[kThreads];
  c = block_argmin_tree(c, s_distance, s_index);
  if (threadIdx.x == 0) store_answer(c, q, indices, distances);
}

// ---------------------------------------------------------------- one block per query (v3–v6)
//
// A block answers one query (the seeds' technique); its threads split the references. What follows
// was tuned on an H100 with scripts/tune/scan_bench.cu on the shapes of case 10 (k=3, m=1024,
// n=2^20) and case 11 (k=16), kernel time only; docs/tuning.md has the tables.
//
// * References in flight per thread. With one reference per step (the seeds' loop) a thread has
//   dim loads outstanding and then waits: for k=3 the kernel used 37 % of L2 throughput, bound by
//   latency, not bandwidth. Loading several references per step, dimension by dimension before any
//   is used: SoA, 1024 threads, k=3: 2.74 ms with one, 1.65 with four.
// * Threads per block. With 1024 threads one or two blocks share an SM; with 256, four or more
//   blocks (queries) run side by side on each SM and read the same reference lines at about the same
//   time, so L1 serves most of them: 1.65 -> 1.37 ms, L1 hit rate 0 -> 74 %, L2 reads 6.5x fewer.
//   When the queries are too few to fill the GPU that way, a query's one block must cover all n with
//   fewer threads (case 8 shape, m=1: 15 ms before, 12 at 256 threads, 6 at 512):
//   query_block_threads keeps 1024 threads then.
// * SoA scans read four consecutive references per 16-byte load, two loads per dimension and step
//   (scan_soa_quads): 0.82-0.95 ms for k=3 and 2.84-2.90 for k=16 in scan_bench with 256 threads.
// * Row-major references (v3's AoS rows, v5's texel rows) longer than 16 B (kNarrowRowFloats) keep
//   the seeds' shape, 1024 threads and one reference per step: a warp's load of one dimension then
//   touches up to 32 lines, and more lines in flight evict each other from L1. Case 11 (k=16), v3 /
//   v5: 35 / 11 ms that way, 42 / 29 ms with 4 references per step, 64 / 21 ms with 256 threads.
//   Except: AoS rows of whole float4s (dim % 4 == 0, scan_strided_vec4) load a quarter as many
//   times, and take block sizes as above with two references per step: case 11 shape 35 -> 9.0 ms
//   (256 threads), case 9 shape (m=1) 70 -> 18 ms (1024 threads), H100, scan_bench.
//
// Either way each thread still meets its references in increasing index order and keeps the first
// of equal distances with a strict `<`, and each sum runs over the dimensions in order.

// Every one-block-per-query kernel is declared __launch_bounds__(kThreads, query_block_min_blocks(kThreads)).
// For the narrow (256-thread) blocks that asks for 4 resident blocks per SM, which caps ptxas at 64
// registers. With the block size alone ptxas aimed at more resident blocks and serialised the loads:
// v4's kernel on the case 11 shape (k=16) then used 44 registers, ran 5 blocks per SM with warps
// stalled ~29 cycles per instruction on L1TEX, and took 6.8 ms; capped at 64 registers, 3.6 ms.
// A minimum of 1 to 3 gives it 72 registers and 3 blocks per SM: 3.5 ms, but 1.11 ms instead of
// 0.81 at k=3 (H100, scan_bench round "harness", docs/tuning.md). Wide blocks name no minimum (0),
// as they were tuned.
inline constexpr int kNarrowMinBlocks = 4;
inline constexpr int kQueryBlockThreadsNarrow = 256;            // many queries: blocks share L1
inline constexpr int kQueryBlockThreadsWide = kSearchThreads;  // few queries: each block covers n alone
constexpr int query_block_min_blocks(int threads) { return threads == kQueryBlockThreadsNarrow ? kNarrowMinBlocks : 0; }
inline constexpr int kNarrowRowFloats = 4;  // longest row-major row read a float at a time in narrow blocks
inline constexpr int kRefsPerStep = 4;      // row-major scans, rows of <= 16 B: references loaded per step
inline constexpr int kLongRowRefsPerStep = 1;  // row-major scans, longer rows
inline constexpr int kVec4RowRefsPerStep = 2;  // row-major scans, longer rows of whole float4s

// Why a scan over row-major references of `dim` floats keeps the seeds' shape (wide blocks,
// kLongRowRefsPerStep), or nullptr when it may use narrow blocks and kRefsPerStep. (v3 reads long
// rows of whole float4s with scan_strided_vec4 instead, when vec4_rows_fit.)
inline const char* wide_row_reason(int dim) {
  return dim > kNarrowRowFloats ? "reference rows longer than 16 B" : nullptr;
}

// One thread's share of a scan over references in rows (AoS: references(j, t) for any j): positions
// begin, begin + stride, ... below end, kRefs per step with all their loads of dimension t issued
// together, then the remainder one at a time.
template <int kRefs, class Query, class References>
__device__ __forceinline__ Candidate scan_strided(int dim, const Query& query, const References& references,
                                                  long long begin, long long end, long long stride) {
  Candidate best = no_candidate();
  long long j = begin;
  for (; j + (kRefs - 1) * stride < end; j += kRefs * stride) {
    float sum[kRefs];
#pragma unroll
    for (int r = 0; r < kRefs; ++r) sum[r] = 0.f;
#pragma unroll
    for (int t = 0; t < dim; ++t) {
      const float q = query(t);
#pragma unroll
      for (int r = 0; r < kRefs; ++r) {
        const float diff = q - references(j + r * stride, t);
        sum[r] += diff * diff;
      }
    }
#pragma unroll
    for (int r = 0; r < kRefs; ++r)
      if (sum[r] < best.distance) best = {sum[r], static_cast<std::int32_t>(j + r * stride)};
  }
  return scan_references(best, j, end, stride, 0,
                         [&](long long i) { return squared_distance(dim, query, references, i); });
}

// References as stored by the harness, rows of dim floats with dim % 4 == 0 and the array 16-byte
// aligned: dimensions 4g .. 4g+3 of reference j are one float4 (vec4_rows_fit checks on the host).
struct AosVec4References {
  const float* values;
  int dim;
  __device__ __forceinline__ float4 group(long long j, int g) const {
    return __ldg(reinterpret_cast<const float4*>(values + j * dim) + g);
  }
};

inline bool vec4_rows_fit(const float* values, int dim) {
  return dim % 4 == 0 && reinterpret_cast<std::uintptr_t>(values) % 16 == 0;
}

// As scan_strided, reading each reference row as dim / 4 float4s (one 16-byte load where the
// scalar scan makes four 4-byte ones); each sum still runs over the dimensions in order.
template <int kRefs, class Query>
__device__ __forceinline__ Candidate scan_strided_vec4(int dim, const Query& query, const AosVec4References& references,
                                                       long long begin, long long end, long long stride) {
  Candidate best = no_candidate();
  const int groups = dim / 4;
  long long j = begin;
  for (; j + (kRefs - 1) * stride < end; j += kRefs * stride) {
    float sum[kRefs];
#pragma unroll
    for (int r = 0; r < kRefs; ++r) sum[r] = 0.f;
#pragma unroll 4
    for (int g = 0; g < groups; ++g) {
      float4 v[kRefs];
#pragma unroll
      for (int r = 0; r < kRefs; ++r) v[r] = references.group(j + r * stride, g);
      const float q0 = query(4 * g), q1 = query(4 * g + 1), q2 = query(4 * g + 2), q3 = query(4 * g + 3);
#pragma unroll
      for (int r = 0; r < kRefs; ++r) {
        const float d0 = q0 - v[r].x, d1 = q1 - v[r].y, d2 = q2 - v[r].z, d3 = q3 - v[r].w;
        sum[r] += d0 * d0;
        sum[r] += d1 * d1;
        sum[r] += d2 * d2;
        sum[r] += d3 * d3;
      }
    }
#pragma unroll
    for (int r = 0; r < kRefs; ++r)
      if (sum[r] < best.distance) best = {sum[r], static_cast<std::int32_t>(j + r * stride)};
  }
  const AosReferences rows{references.values, dim};
  return scan_references(best, j, end, stride, 0,
                         [&](long long i) { return squared_distance(dim, query, rows, i); });
}

// References transposed to dim × ld with ld a multiple of 4 and the array 16-byte aligned: dimension
// t of references 4i .. 4i+3 is one float4. Quads of the same role as positions above.
struct SoaQuadReferences {
  const float* values;
  long long ld;
  __device__ __forceinline__ float4 quad(long long i, int t) const {
    return __ldg(reinterpret_cast<const float4*>(values + t * ld) + i);
  }
};

__device__ __forceinline__ void add_squared_differences(float4& sum, float q, const float4& r) {
  const float dx = q - r.x, dy = q - r.y, dz = q - r.z, dw = q - r.w;
  sum.x += dx * dx;
  sum.y += dy * dy;
  sum.z += dz * dz;
  sum.w += dw * dw;
}

__device__ __forceinline__ void take_quad(Candidate& best, const float4& sum, long long first) {
  if (sum.x < best.distance) best = {sum.x, static_cast<std::int32_t>(first)};
  if (sum.y < best.distance) best = {sum.y, static_cast<std::int32_t>(first + 1)};
  if (sum.z < best.distance) best = {sum.z, static_cast<std::int32_t>(first + 2)};
  if (sum.w < best.distance) best = {sum.w, static_cast<std::int32_t>(first + 3)};
}

inline constexpr int kQuadsPerStep = 2;  // SoA scans: 8 references per step in two 16-byte loads per dimension

// One thread's share of an SoA scan: quads threadIdx.x, +kThreads, ... (kQuads per step, one
// 16-byte load per quad and dimension), then the last n % 4 references one at a time. Versions use
// kQuadsPerStep; scan_bench times other counts.
template <int kThreads, int kQuads = kQuadsPerStep, class Query>
__device__ __forceinline__ Candidate scan_soa_quads(int dim, const Query& query, const SoaQuadReferences& refs,
                                                    long long n) {
  Candidate best = no_candidate();
  const long long quads = n / 4;
  constexpr long long stride = kThreads;
  long long i = threadIdx.x;
  for (; i + (kQuads - 1) * stride < quads; i += kQuads * stride) {
    float4 sum[kQuads];
#pragma unroll
    for (int r = 0; r < kQuads; ++r) sum[r] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int t = 0; t < dim; ++t) {
      const float q = query(t);
#pragma unroll
      for (int r = 0; r < kQuads; ++r) add_squared_differences(sum[r], q, refs.quad(i + r * stride, t));
    }
#pragma unroll
    for (int r = 0; r < kQuads; ++r) take_quad(best, sum[r], 4 * (i + r * stride));
  }
  for (; i < quads; i += stride) {
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int t = 0; t < dim; ++t) add_squared_differences(sum, query(t), refs.quad(i, t));
    take_quad(best, sum, 4 * i);
  }
  const SoaReferences tail{refs.values, refs.ld};
  return scan_references(best, 4 * quads + threadIdx.x, n, stride, 0,
                         [&](long long j) { return squared_distance(dim, query, tail, j); });
}

}  // namespace knn::gpu
