// Test-only version: a kernel that writes through an invalid device address, which leaves the
// process's CUDA context broken (cudaErrorIllegalAddress is sticky). Used to test --isolate on a
// GPU machine.
#include "core/cuda/runtime.hpp"
#include "core/registry.hpp"

namespace {

// One thread writes far outside any allocation.
__global__ void fault_kernel(int* p) { p[threadIdx.x + (1ll << 40) / sizeof(int)] = 1; }

void fault_query(const knn::Problem&, knn::Neighbors, knn::RunContext& ctx) {
  knn::cuda::DeviceScope scope(ctx.env.devices.at(0).ordinal);
  knn::cuda::DeviceBuffer<int> buf(32);
  fault_kernel<<<1, 1>>>(buf.data());
  KNN_CUDA_CHECK_LAUNCH();
  KNN_CUDA_TRY(cudaDeviceSynchronize());
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "t3";
  d.title = "test only: GPU illegal address";
  d.family = knn::Family::gpu;
  d.gpus = knn::GpuNeed::one;
  d.make = knn::query_only(fault_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
