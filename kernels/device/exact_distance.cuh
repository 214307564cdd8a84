#pragma once
// Squared distances on the device with the host's roundings (no FMA contraction), so that GPU
// distances equal v0's squared_distance() bit for bit: the point-to-point term of the brute-force
// scans and tree leaves (v11, v13, v14, v16, v17) and the point-to-box term of the trees' pruning.
#include <cuda_runtime.h>

namespace knn::gpu::exact {

// One squared-difference term added to a running sum with the host's roundings.
__device__ __forceinline__ float add_square(float sum, float a, float b) {
  const float diff = __fsub_rn(a, b);
  return __fadd_rn(sum, __fmul_rn(diff, diff));
}

// The same for the gap from a coordinate to the interval [lo, hi] (0 inside it).
__device__ __forceinline__ float add_gap_square(float sum, float q, float lo, float hi) {
  const float gap = q < lo ? __fsub_rn(lo, q) : (q > hi ? __fsub_rn(q, hi) : 0.f);
  return __fadd_rn(sum, __fmul_rn(gap, gap));
}

}  // namespace knn::gpu::exact
