#pragma once
// The score filters' device primitives (the tensor-core filter, the fp32 filter and v15's candidate
// buffers; the proof is in kernels/common/tc_filter.cuh): a query's score threshold, the fused
// scan's exact distance, and a lower bound of ‖q − c‖².
#include <cuda_runtime.h>

namespace knn::gpu::tc {

// The threshold for a bound `best` on a query's topk-th distance: a score above it cannot enter the
// answer, nor tie with it.
__device__ __forceinline__ float threshold_for(float best, float norm_low, float band) {
  return __fadd_ru(__fsub_ru(__fmul_ru(best, 1.f + 0x1p-18f), norm_low), band);
}

// The fused scan's distance (kernels/common/fused_scan.cuh, group_distances): equal bit for bit.
// The rows may be in global or shared memory, or (DIM > 0, every index known at compile time) in
// registers.
template <int DIM = 0>
__device__ __forceinline__ float exact_distance(const float* q, const float* r, int dim = DIM) {
  float e = q[0] - r[0];
  float s = __fmul_rn(e, e);
#pragma unroll
  for (int t = 1; t < (DIM > 0 ? DIM : dim); ++t) {
    e = q[t] - r[t];
    s = __fmaf_rn(e, e, s);
  }
  return s;
}

// A lower bound of ‖q − c‖² (the fp32 sum's error is below 2^-18 of it for k ≤ 32).
__device__ __forceinline__ float norm_low(const float* q, int dim, float c) {
  float norm = 0.f;
  for (int i = 0; i < dim; ++i) {
    const float x = __ldg(q + i) - c;
    norm = __fmaf_rn(x, x, norm);
  }
  return __fmul_rd(norm, 1.f - 0x1p-18f);
}

}  // namespace knn::gpu::tc
