// v4: v3 after transposing the references from AoS (n × dim) to SoA (dim × ld) on the device, so a
// warp's loads of one dimension for consecutive references are coalesced. The transpose is its own
// kernel and phase ("transpose"); the queries stay as they are (a block reads only its own query,
// which it stages in shared memory). ld is n rounded up to 4, so each dimension of four consecutive
// references is one 16-byte load: the layout makes those wide loads possible, where v3's rows do
// not. Block size and references per step as v3 (argmin.cuh). The kernel and its host path are in
// kernels/argmin/fused_soa.cuh, where the test-only t8 runs them slowed on purpose.
#include "kernels/argmin/fused_soa.cuh"
#include "kernels/argmin/gpu_frame.hpp"

namespace {

void v4_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  knn::gpu::run_fused_soa(p, out, ctx);
}

knn::VersionDesc describe() {
  return knn::gpu::describe_argmin("v4", "GPU fused kernel on SoA references (AoS->SoA transpose first)",
                                   knn::Family::gpu, knn::GpuNeed::one, v4_query,
                                   [](const knn::Problem& p, const knn::Environment&) {
                                     return knn::gpu::fused_soa_device_bytes(p);
                                   });
}

}  // namespace

KNN_REGISTER_VERSION(describe());
