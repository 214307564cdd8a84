#pragma once
// v15's query grid's kernels (query_grid.hpp; the host side is query_grid.cu). One block sorts the
// queries into the cells once per call. Before each chunk, one block takes each query's bound b (the distance of its topk-th key: at least its final
// one, tc::offer says why), each cell's largest bound b_c and its box widened by R_c (below) in cells;
// a warp per cell g then finds the range of cells (per dimension) that holds each cell whose widened
// box meets g. Each thread of the chunk's kernel takes 2 rows; a row finds its cell g and tests only the
// cells of g's range: their box against b_c, then their queries.
//
// Why nothing is lost. For a row r and a query q of cell c with exact distance d = exact_distance(q, r)
// ≤ b ≤ b_c:
// - The ranges. d is summed from e_t = fl(q_t − r_t) by a product and fused multiply-adds of
//   non-negative terms, each rounding monotone, so d ≥ fl(e_t²), and e_t² ≤ b_c·(1 + 2^-23) + 2^-149
//   (the relative rounding, and the absolute one of a square below the normal range, which may even
//   round to 0). A difference that rounds into the subnormal range is exact, so the true |q_t − r_t|
//   is at most |e_t|·(1 + 2^-24), below R_c = fl↑(fl↑(√fl↑(b_c + 2^-148))·1.0001). So lo_t − R_c ≤ r_t ≤ hi_t + R_c for the box [lo, hi] of c, and fl(lo_t − R_c),
//   fl(hi_t + R_c) (rounded to nearest, r_t a float) stay on their sides of r_t. The cell of a value,
//   floor(fl(fl(x − lo)·inv)) clamped to the grid, never decreases as x grows, so r's cell lies
//   within the widened range of c, and c within g's range.
// - The box test. Per dimension the gap g_t from r_t to [lo_t, hi_t], computed as fl(lo_t − r_t) or
//   fl(r_t − hi_t), is at most |e_t| (monotone rounding again), and the box's distance is summed with
//   the same product and fused multiply-adds, so it is at most d ≤ b_c. A cell is skipped only above.
// - Ties: a key is offered where d ≤ the query's bound, so a row at the bound's distance with a smaller
//   index still gets its chance, as in the scan.
#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

#include "kernels/bruteforce/detail/filters/tc_filter.cuh"
#include "kernels/bruteforce/detail/grid/query_grid.hpp"

namespace knn::gpu::grid {

constexpr int kBuildBlock = 1024;  // one block sorts the queries: at least kGridMaxCells threads
static_assert(kBuildBlock >= kGridMaxCells);

struct Header {
  float lo[kGridMaxDim];
  float inv[kGridMaxDim];  // side / extent, 0 for a flat dimension
};

struct GridArgs {
  const float* __restrict__ queries;
  const float* __restrict__ references;
  int m, topk, side, cells, row_begin, row_end;
  float4* sorted;   // the queries by cell: coordinates, w = the query's index (its bits)
  int* starts;      // cell c's queries are sorted[starts[c], starts[c + 1])
  float* boxes;     // cell c: the least coordinate of its queries per dimension, then the largest
  Header* header;
  float* bounds;       // per chunk (reach_kernel): each query's bound, by position in `sorted`
  float* cell_bounds;  // the largest of each cell's
  int* widened;        // per cell, its box widened by its reach, in cells (reach_kernel)
  unsigned* reach;     // per cell g and dimension, the range of cells a row in g tests (range_kernel)
  unsigned long long* best;   // m × topk keys (tc::offer)
  unsigned long long* exact;  // exact distances computed, then cells tested (their box against their bound)
};

// The cell of x along one dimension: floor(fl(fl(x − lo)·inv)) clamped to [0, side − 1] (NaN, from
// ±inf·0, to 0). It never decreases as x grows.
__device__ __forceinline__ int cell_of(float x, float lo, float inv, int side) {
  const float f = floorf(__fmul_rn(__fsub_rn(x, lo), inv));
  return int(fminf(fmaxf(f, 0.f), float(side - 1)));
}

template <int DIM>
__device__ __forceinline__ int cell_index(const float* x, const float* lo, const float* inv, int side) {
  int c = 0;
#pragma unroll
  for (int t = DIM - 1; t >= 0; --t) c = c * side + cell_of(x[t], lo[t], inv[t], side);
  return c;
}

// One block: the queries' bounding box, each query's cell, a count and scan per cell, the queries
// written in cell order, and each cell's box.
template <int DIM>
__global__ void __launch_bounds__(kBuildBlock) build_kernel(GridArgs a) {
  using Scan = cub::BlockScan<int, kBuildBlock>;
  __shared__ typename Scan::TempStorage scan;
  __shared__ float warp_lo[kBuildBlock / 32][DIM], warp_hi[kBuildBlock / 32][DIM];
  __shared__ float lo[DIM], inv[DIM];
  __shared__ int first[kGridMaxCells], filled[kGridMaxCells];
  const int tid = threadIdx.x;
  float least[DIM], most[DIM];
#pragma unroll
  for (int t = 0; t < DIM; ++t) least[t] = INFINITY, most[t] = -INFINITY;
  for (int q = tid; q < a.m; q += kBuildBlock)
#pragma unroll
    for (int t = 0; t < DIM; ++t) {
      const float v = a.queries[std::size_t(q) * DIM + t];
      least[t] = fminf(least[t], v), most[t] = fmaxf(most[t], v);
    }
#pragma unroll
  for (int t = 0; t < DIM; ++t) {
    least[t] = warp::min(least[t]), most[t] = warp::max(most[t]);
    if ((tid & 31) == 0) warp_lo[tid / 32][t] = least[t], warp_hi[tid / 32][t] = most[t];
  }
  if (tid < kGridMaxCells) first[tid] = 0, filled[tid] = 0;
  __syncthreads();
  if (tid < DIM) {
    float l = INFINITY, h = -INFINITY;
    for (int w = 0; w < kBuildBlock / 32; ++w) l = fminf(l, warp_lo[w][tid]), h = fmaxf(h, warp_hi[w][tid]);
    lo[tid] = l;
    inv[tid] = h > l ? __fdiv_rn(float(a.side), __fsub_rn(h, l)) : 0.f;
    a.header->lo[tid] = lo[tid], a.header->inv[tid] = inv[tid];
  }
  __syncthreads();
  float x[DIM];
  for (int q = tid; q < a.m; q += kBuildBlock) {
#pragma unroll
    for (int t = 0; t < DIM; ++t) x[t] = a.queries[std::size_t(q) * DIM + t];
    atomicAdd(&first[cell_index<DIM>(x, lo, inv, a.side)], 1);
  }
  __syncthreads();
  int before = 0;
  Scan(scan).ExclusiveSum(tid < a.cells ? first[tid] : 0, before);
  __syncthreads();
  if (tid < a.cells) first[tid] = before, a.starts[tid] = before;
  if (tid == 0) a.starts[a.cells] = a.m;
  __syncthreads();
  for (int q = tid; q < a.m; q += kBuildBlock) {
#pragma unroll
    for (int t = 0; t < DIM; ++t) x[t] = a.queries[std::size_t(q) * DIM + t];
    const int c = cell_index<DIM>(x, lo, inv, a.side);
    const int at = first[c] + atomicAdd(&filled[c], 1);
    a.sorted[at] = make_float4(x[0], DIM > 1 ? x[DIM > 1 ? 1 : 0] : 0.f, DIM > 2 ? x[DIM > 2 ? 2 : 0] : 0.f, __int_as_float(q));
  }
  __syncthreads();  // the block's writes to `sorted` are visible to it from here
  if (tid < a.cells) {
    const int end = tid + 1 < a.cells ? first[tid + 1] : a.m;
#pragma unroll
    for (int t = 0; t < DIM; ++t) least[t] = INFINITY, most[t] = -INFINITY;
    for (int i = first[tid]; i < end; ++i) {
      const float4 q = a.sorted[i];
      const float v[3] = {q.x, q.y, q.z};
#pragma unroll
      for (int t = 0; t < DIM; ++t) least[t] = fminf(least[t], v[t]), most[t] = fmaxf(most[t], v[t]);
    }
#pragma unroll
    for (int t = 0; t < DIM; ++t) a.boxes[tid * 2 * DIM + t] = least[t], a.boxes[tid * 2 * DIM + DIM + t] = most[t];
  }
}

// The gap from x to [lo, hi] (0 inside), rounded as the distance's difference would be. (Not
// exact::add_gap_square: that sums with v0's separate products, this one with tc::exact_distance's
// fused multiply-adds, as the box test's argument needs.)
__device__ __forceinline__ float gap(float x, float lo, float hi) {
  return x < lo ? __fsub_rn(lo, x) : x > hi ? __fsub_rn(x, hi) : 0.f;
}

// R ≥ the largest |q_t − r_t| of a pair whose exact distance is at most b (the top of this file).
__device__ __forceinline__ float reach_of(float b) { return __fmul_ru(__fsqrt_ru(__fadd_ru(b, 0x1p-148f)), 1.0001f); }

// Before each chunk, one block: each query's bound by its position in `sorted`, each cell's largest,
// and each cell's box widened by its reach as a range of cells per dimension (`widened`: from, then to,
// per dimension; an empty cell from = side, to = -1).
template <int DIM>
__global__ void __launch_bounds__(kBuildBlock) reach_kernel(GridArgs a) {
  const int tid = threadIdx.x;
  for (int i = tid; i < a.m; i += kBuildBlock)
    a.bounds[i] = __uint_as_float(unsigned(a.best[std::size_t(__float_as_int(a.sorted[i].w)) * a.topk + a.topk - 1] >> 32));
  __syncthreads();  // the block's writes to `bounds` are visible to it from here
  float lo[DIM], inv[DIM];
#pragma unroll
  for (int t = 0; t < DIM; ++t) lo[t] = a.header->lo[t], inv[t] = a.header->inv[t];
  for (int c = tid; c < a.cells; c += kBuildBlock) {
    const int begin = a.starts[c], end = a.starts[c + 1];
    float b = 0.f;
    for (int i = begin; i < end; ++i) b = fmaxf(b, a.bounds[i]);
    a.cell_bounds[c] = b;
    const float reach = reach_of(b);
#pragma unroll
    for (int t = 0; t < DIM; ++t) {
      a.widened[c * 2 * DIM + t] = begin == end ? a.side : cell_of(__fsub_rn(a.boxes[c * 2 * DIM + t], reach), lo[t], inv[t], a.side);
      a.widened[c * 2 * DIM + DIM + t] = begin == end ? -1 : cell_of(__fadd_rn(a.boxes[c * 2 * DIM + DIM + t], reach), lo[t], inv[t], a.side);
    }
  }
}

// Then a warp per cell g: the range of cells per dimension that holds every cell whose widened range
// holds g; a row in g tests only those (`reach`: per g and dimension, the first cell | one past the
// last << 16).
template <int DIM>
__global__ void __launch_bounds__(kGridBlock) range_kernel(GridArgs a) {
  const int g = int((blockIdx.x * (long long)kGridBlock + threadIdx.x) / 32), lane = threadIdx.x & 31;
  if (g >= a.cells) return;  // the whole warp
  int at[DIM], from[DIM], to[DIM];
#pragma unroll
  for (int t = 0, rest = g; t < DIM; ++t, rest /= a.side) at[t] = rest % a.side, from[t] = a.side, to[t] = -1;
#pragma unroll 4
  for (int c = lane; c < a.cells; c += 32) {
    bool meets = true;
#pragma unroll
    for (int t = 0; t < DIM; ++t) meets = meets && a.widened[c * 2 * DIM + t] <= at[t] && at[t] <= a.widened[c * 2 * DIM + DIM + t];
    if (!meets) continue;
#pragma unroll
    for (int t = 0, rest = c; t < DIM; ++t, rest /= a.side) from[t] = min(from[t], rest % a.side), to[t] = max(to[t], rest % a.side);
  }
#pragma unroll
  for (int t = 0; t < DIM; ++t) {
    from[t] = warp::min(from[t]), to[t] = warp::max(to[t]);
    if (lane == 0) a.reach[g * DIM + t] = unsigned(from[t]) | unsigned(to[t] + 1) << 16;  // to + 1: 0 for none
  }
}

// The first chunk, before the grid: kFirstSlices warps per query take the exact distance to every
// row, each lane keeping its least key; topk 1 keeps each warp's least (so the chunk's answer, and the
// grid skips the chunk), topk > 1 offers each lane's (a bound at least the chunk's topk-th).
constexpr int kFirstSlices = 8;

template <int DIM>
__global__ void __launch_bounds__(kGridBlock) first_kernel(GridArgs a) {
  const long long warp = (blockIdx.x * (long long)kGridBlock + threadIdx.x) / 32;
  const int q = int(warp / kFirstSlices), slice = int(warp % kFirstSlices), lane = threadIdx.x & 31;
  if (q >= a.m) return;  // the whole warp
  float x[DIM];
#pragma unroll
  for (int t = 0; t < DIM; ++t) x[t] = a.queries[std::size_t(q) * DIM + t];
  unsigned long long least = tc::kNoKey;
#pragma unroll 4
  for (int row = a.row_begin + slice * 32 + lane; row < a.row_end; row += 32 * kFirstSlices) {
    float r[DIM];
#pragma unroll
    for (int t = 0; t < DIM; ++t) r[t] = __ldg(a.references + std::size_t(row) * DIM + t);
    const unsigned long long key = scan::pack(tc::exact_distance<DIM>(x, r), row);
    least = key < least ? key : least;
  }
  unsigned long long* list = a.best + std::size_t(q) * a.topk;
  if (a.topk == 1) {
    least = warp::min(least);
    if (lane == 0) atomicMin(list, least);
  } else if (least != tc::kNoKey) {
    tc::offer(list, a.topk, least);
  }
}

// A chunk's rows, 2 a thread. The grid's arrays are read through L1 (no copy into shared memory: a
// block's copy waited on L2 longer than its rows took); each query's bound is the chunk's first.
template <int DIM>
__global__ void __launch_bounds__(kGridBlock) search_kernel(GridArgs a) {
  float lo[DIM], inv[DIM];
#pragma unroll
  for (int t = 0; t < DIM; ++t) lo[t] = a.header->lo[t], inv[t] = a.header->inv[t];
  unsigned long long exact = 0, tests = 0;
  const int base = a.row_begin + blockIdx.x * kGridBlock * kGridRowsPerThread + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kGridRowsPerThread; ++j) {
    const int row = base + j * kGridBlock;
    if (row >= a.row_end) break;
    float x[DIM];
#pragma unroll
    for (int t = 0; t < DIM; ++t) x[t] = __ldg(a.references + std::size_t(row) * DIM + t);
    const unsigned* range = a.reach + cell_index<DIM>(x, lo, inv, a.side) * DIM;
    int from[3] = {0, 0, 0}, to[3] = {0, 0, 1};  // to: one past
    if (DIM < 2) to[1] = 1;
#pragma unroll
    for (int t = 0; t < DIM; ++t) {
      const unsigned span = __ldg(range + t);
      from[t] = int(span & 0xffffu), to[t] = int(span >> 16);
    }
    for (int c2 = from[2]; c2 < to[2]; ++c2)
      for (int c1 = from[1]; c1 < to[1]; ++c1)
        for (int c0 = from[0]; c0 < to[0]; ++c0) {
          const int c = (c2 * a.side + c1) * a.side + c0;
          const int begin = __ldg(a.starts + c), end = __ldg(a.starts + c + 1);
          if (begin == end) continue;
          ++tests;
          const float* box = a.boxes + c * 2 * DIM;
          float g = gap(x[0], __ldg(box), __ldg(box + DIM));
          float s = __fmul_rn(g, g);
#pragma unroll
          for (int t = 1; t < DIM; ++t) {
            g = gap(x[t], __ldg(box + t), __ldg(box + DIM + t));
            s = __fmaf_rn(g, g, s);
          }
          if (s > __ldg(a.cell_bounds + c)) continue;
          exact += end - begin;
          for (int i = begin; i < end; ++i) {
            const float4 q4 = __ldg(a.sorted + i);
            const float q[3] = {q4.x, q4.y, q4.z};
            const float d = tc::exact_distance<DIM>(q, x);
            if (d <= __ldg(a.bounds + i)) tc::offer(a.best + std::size_t(__float_as_int(q4.w)) * a.topk, a.topk, scan::pack(d, row));
          }
        }
  }
  exact = warp::sum(exact), tests = warp::sum(tests);
  if ((threadIdx.x & 31) == 0 && exact > 0) atomicAdd(a.exact, exact);
  if ((threadIdx.x & 31) == 0 && tests > 0) atomicAdd(a.exact + 1, tests);
}

using Kernel = void (*)(GridArgs);
struct Kernels {
  Kernel build, first, reach, range, search;
};

template <int DIM>
Kernels kernels_of() {
  return {build_kernel<DIM>, first_kernel<DIM>, reach_kernel<DIM>, range_kernel<DIM>, search_kernel<DIM>};
}

inline Kernels kernels_for(int dim) {
  if (dim == 1) return kernels_of<1>();
  if (dim == 2) return kernels_of<2>();
  if (dim == 3) return kernels_of<3>();
  throw std::logic_error(fmt::format("query grid: k = {} not compiled in", dim));
}

}  // namespace knn::gpu::grid
