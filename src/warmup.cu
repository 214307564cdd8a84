// The warm-up kernel: one tiny launch per device absorbs context creation and module loading,
// so that no measured call pays the cold start.
#include "devices.hpp"
#include "kernels/common/cuda_rt.hpp"

namespace {
// One block of 32 threads; each thread writes its own slot.
__global__ void warmup_kernel(int* out) { out[threadIdx.x] = int(threadIdx.x) * 2 + 1; }
}  // namespace

namespace knn::detail {
void run_warmup_kernel(int device) {
  cuda::DeviceScope scope(device);
  KNN_CUDA_TRY(cudaFree(nullptr));  // forces context creation
  cuda::DeviceBuffer<int> buf(32);
  warmup_kernel<<<1, 32>>>(buf.data());
  KNN_CUDA_CHECK_LAUNCH();
  KNN_CUDA_TRY(cudaDeviceSynchronize());
}
}  // namespace knn::detail
