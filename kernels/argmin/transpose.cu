// The references' AoS → SoA transpose (the seeds' mat_inv_kernel idea). The matrix is tall and thin
// (dim is 3 to a few dozen), so a shared-memory tiled transpose would waste most of each tile; one
// thread per reference with L1 absorbing the strided loads is simple and near copy speed.
#include "kernels/argmin/transpose.hpp"

#include <algorithm>

namespace knn::gpu {
namespace {

constexpr int kTransposeThreads = 256;

// A block moves blockDim.x consecutive references per grid step; one thread moves one reference j
// (grid-stride), reading its dim contiguous floats and writing soa[t * ld + j]: for each t the warp's
// stores are consecutive, and its loads of neighbouring rows share cache lines.
__global__ void aos_to_soa_kernel(int n, int dim, long long ld, const float* __restrict__ aos,
                                  float* __restrict__ soa) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += stride)
    for (int t = 0; t < dim; ++t) soa[t * ld + j] = __ldg(aos + j * dim + t);
}

}  // namespace

void transpose_references(DeviceFrame& frame, const float* aos, int n, int dim, float* soa, long long ld) {
  if (n < 1 || dim < 1) return;
  // A grid of at most 2^20 blocks covers any n through the stride loop.
  const int blocks = std::min(cuda::divup(n, kTransposeThreads), 1 << 20);
  frame.launch("transpose", [&] {
    aos_to_soa_kernel<<<blocks, kTransposeThreads, 0, frame.stream()>>>(n, dim, ld, aos, soa);
  });
}

}  // namespace knn::gpu
