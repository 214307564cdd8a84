// p-faiss-gpu: faiss's exact brute force on one GPU, faiss::gpu::bfKnn (the ‖q‖² + ‖r‖² − 2 q·r
// recipe with cuBLAS, then faiss's k-selection), as a peer. Built only where cmake/peers.cmake
// finds a faiss with GPU support (faiss/gpu/GpuDistance.h) and CUDA; elsewhere, Debian's and
// Ubuntu's libfaiss-dev among them (CPU only), it skips with the reason and how to get one.
// Inputs and outputs stay in host memory: faiss copies them, and the timed call includes that.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "core/topk.hpp"
#include "kernels/peers/peers.hpp"

#ifndef KNN_HAVE_FAISS_GPU
#define KNN_HAVE_FAISS_GPU 0  // cmake/peers.cmake sets it
#endif
#if KNN_HAVE_FAISS_GPU
#include <cuda_runtime.h>
#include <faiss/gpu/GpuDistance.h>
#include <faiss/gpu/StandardGpuResources.h>
#endif

namespace {

constexpr const char* kHowToGet =
    "faiss built with -DFAISS_ENABLE_GPU=ON from source, or conda install -c pytorch faiss-gpu; Debian's and Ubuntu's "
    "libfaiss-dev are CPU only";

#if KNN_HAVE_FAISS_GPU
void bfknn(const knn::Problem& p, knn::Neighbors out, int device) {
  cudaSetDevice(device);
  faiss::gpu::StandardGpuResources resources;
  std::vector<faiss::idx_t> labels(p.result_slots());
  faiss::gpu::GpuDistanceParams args;
  args.metric = faiss::METRIC_L2;
  args.k = p.topk;
  args.dims = p.dim;
  args.vectors = p.references;
  args.vectorsRowMajor = true;
  args.numVectors = p.n;
  args.queries = p.queries;
  args.queriesRowMajor = true;
  args.numQueries = p.m;
  args.outDistances = out.distances;
  args.outIndices = labels.data();
  faiss::gpu::bfKnn(&resources, args);
  for (std::size_t i = 0; i < labels.size(); ++i) out.indices[i] = std::int32_t(labels[i]);
}

void faiss_gpu_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const int device = ctx.env.devices.at(0).ordinal;
  ctx.devices_used = {device};
  if (!p.self_join) {
    bfknn(p, out, device);
    knn::peers::order_ties(p, out);
    return;
  }
  const knn::Problem wide = knn::widened_for_self_join(p);
  std::vector<std::int32_t> indices(wide.result_slots());
  std::vector<float> distances(wide.result_slots());
  bfknn(wide, knn::Neighbors{indices.data(), distances.data()}, device);
  knn::peers::order_ties(wide, knn::Neighbors{indices.data(), distances.data()});
  knn::drop_self(p, indices.data(), distances.data(), out);
  ctx.path = "self-join: topk + 1 searched, the point itself dropped";
}
#else
void faiss_gpu_query(const knn::Problem&, knn::Neighbors, knn::RunContext&) {  // supports() skips first
  throw std::runtime_error(knn::peers::built_without("GPU faiss", kHowToGet));
}
#endif

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "p-faiss-gpu";
  d.title = KNN_HAVE_FAISS_GPU ? "faiss bfKnn on one GPU (exact brute force, cuBLAS ‖q‖² + ‖r‖² − 2 q·r)"
                               : "faiss bfKnn on one GPU (not built: no faiss with GPU support was found)";
  d.family = knn::Family::peer;
  d.gpus = knn::GpuNeed::one;
  d.self_join = true;
  d.supports = [](const knn::Problem&, const knn::Environment&) {
    return knn::peers::unless_built(KNN_HAVE_FAISS_GPU, "GPU faiss", kHowToGet);
  };
  d.make = knn::query_only(faiss_gpu_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
