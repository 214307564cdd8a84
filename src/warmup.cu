// The warm-up kernel: one tiny launch per device absorbs context creation and module loading,
// so that no measured call pays the cold start.
#include <cstdint>

#include "devices.hpp"
#include "core/cuda/runtime.hpp"

namespace {
// One block of 32 threads; each thread writes its own slot.
__global__ void warmup_kernel(int* out) { out[threadIdx.x] = int(threadIdx.x) * 2 + 1; }
}  // namespace

namespace knn::detail {
void run_warmup_kernel(int device) {
  cuda::DeviceScope scope(device);
  KNN_CUDA_TRY(cudaFree(nullptr));  // forces context creation
  // Keep freed memory in the device's pool between calls (trimmed by trim_device_pools).
  cudaMemPool_t pool;
  KNN_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t keep = ~0ull;
  KNN_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  cuda::DeviceBuffer<int> buf(32);
  warmup_kernel<<<1, 32>>>(buf.data());
  KNN_CUDA_CHECK_LAUNCH();
  KNN_CUDA_TRY(cudaDeviceSynchronize());
}
void trim_pool(int device) {
  cuda::DeviceScope scope(device);
  KNN_CUDA_TRY(cudaDeviceSynchronize());
  cudaMemPool_t pool;
  KNN_CUDA_TRY(cudaDeviceGetDefaultMemPool(&pool, device));
  KNN_CUDA_TRY(cudaMemPoolTrimTo(pool, 0));
}
}  // namespace knn::detail
