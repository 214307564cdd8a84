#pragma once
// The tile filter's device pieces below its kernel (tc_tile.cu; v16's tensor-core leaf scan, kdtree_gpu_tc.cuh, takes them too):
// the kernels' arguments, the chunk's rows packed once as fp16 B fragments with their norms
// (pack_kernel), the asynchronous copy into shared memory and the m16n8k16 product.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/bruteforce/detail/filters/tc_tile.hpp"

namespace knn::gpu::tile {

constexpr int kStageLanes = kTileStageGroups * 32;  // one record per lane and 8-row group

struct TileArgs {
  const float* __restrict__ queries;
  const float* __restrict__ references;
  // Per (group, lane): fp16 (r − c)s of row g, dimensions 2t, 2t+1 (x) and 2t+8, 2t+9 (y), then the fp32
  // ‖(r − c)s‖² of rows 2t (z) and 2t + 1 (w), the accumulator columns the lane holds.
  uint4* packed;
  int dim, m, topk, row_begin, row_end, stages;  // the chunk [row_begin, row_end): its groups padded to whole stages
  int splits;  // blocks along the chunk's stages (blockIdx.y), their keys merged in global memory (SPLIT)
  bool self_join;
  float center, scale, scale2, band;
  unsigned long long* best;  // m × topk keys
  unsigned long long* candidates;
  const std::int32_t* row_index = nullptr;  // pack_kernel: a row whose index is negative is padding (v16's leaves)
};

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
// never a candidate). For k ≤ kTileFoldDims only the fragments are kept (an uint2 per lane and group).
// A template only so that two translation units (the tile filter's and v16's) may launch it.
template <int = 0>
__global__ void pack_kernel(TileArgs a) {
  const long long id = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (id >= (long long)a.stages * kStageLanes) return;
  const int lane = int(id & 31), g = lane >> 2, t = lane & 3;
  const long long group_row = a.row_begin + (id >> 5) * 8;
  uint2 b{0u, 0u};
  const auto real = [&](long long row) { return row < a.row_end && (a.row_index == nullptr || a.row_index[row] >= 0); };
  if (real(group_row + g)) {
    const float* r = a.references + std::size_t(group_row + g) * a.dim;
    b.x = pack_half2(scaled(r, 2 * t, a.dim, a.center, a.scale), scaled(r, 2 * t + 1, a.dim, a.center, a.scale));
    b.y = pack_half2(scaled(r, 2 * t + 8, a.dim, a.center, a.scale), scaled(r, 2 * t + 9, a.dim, a.center, a.scale));
  }
  const bool fold = a.dim <= kTileFoldDims;
  if (fold && t == 3) b.y = pack_half2(1.f, 1.f);  // dimensions 14 and 15: the folded threshold
  if (fold && t == 2) {                            // dimensions 12 and 13: row g's norm, hi + lo
    const float n = real(group_row + g) ? row_norm(a, group_row + g) : 65504.f;
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
    if (!real(row)) continue;
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

}  // namespace knn::gpu::tile
