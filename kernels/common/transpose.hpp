#pragma once
// AoS → SoA transpose of the references (v4, v6, v7, and v8/v9 through v7's path).
#include "kernels/common/gpu_frame.hpp"

namespace knn::gpu {

// Enqueues on the frame's stream, timed as "transpose": aos (n × dim, row-major) into soa (dim × n),
// so dimension t of reference j lands at soa[t * n + j].
void transpose_references(DeviceFrame& frame, const float* aos, int n, int dim, float* soa);

}  // namespace knn::gpu
