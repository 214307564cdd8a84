#pragma once
// AoS → SoA transpose of the references (v4, v6, v7, and v8/v9 through v7's path).
#include "kernels/argmin/gpu_frame.hpp"

namespace knn::gpu {

// Enqueues on the frame's stream, timed as "transpose": aos (n × dim, row-major) into soa (dim × ld,
// ld >= n), so dimension t of reference j lands at soa[t * ld + j]. Columns n .. ld-1 are not written.
void transpose_references(DeviceFrame& frame, const float* aos, int n, int dim, float* soa, long long ld);

// The same with ld = n (v7's layout).
inline void transpose_references(DeviceFrame& frame, const float* aos, int n, int dim, float* soa) {
  transpose_references(frame, aos, n, dim, soa, n);
}

// The leading dimension that lets the SoA scan read each dimension as float4 (argmin.cuh's
// SoaQuadReferences): n rounded up to a multiple of 4.
inline long long quad_leading_dimension(int n) { return (static_cast<long long>(n) + 3) / 4 * 4; }

}  // namespace knn::gpu
