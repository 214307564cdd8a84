#pragma once
// The query side the GPU tree versions (v11, v13) share: upload the queries, run the version's
// search, download the m × topk answers, each step timed with the stream's events.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/cuda/runtime.hpp"
#include "core/registry.hpp"

namespace knn::tree::gpu {

// On the current device and `stream`: uploads p's m queries ("h2d"), calls
// search(queries, indices, distances) to enqueue the search ("kernel"; not called when m = 0),
// downloads the answers into `out` ("d2h"), waits for the stream and reports the phases to
// ctx.timing. Every device buffer holds at least one element, so m = 0 still passes valid pointers.
template <class Search>
void run_queries(const Problem& p, Neighbors out, RunContext& ctx, cudaStream_t stream, Search&& search) {
  cuda::DeviceBuffer<float> queries(std::max<std::size_t>(p.query_floats(), 1));
  cuda::DeviceBuffer<std::int32_t> indices(std::max<std::size_t>(p.result_slots(), 1));
  cuda::DeviceBuffer<float> distances(std::max<std::size_t>(p.result_slots(), 1));
  cuda::PhaseTimer timer(stream);
  timer.begin("h2d");
  KNN_CUDA_TRY(cudaMemcpyAsync(queries.data(), p.queries, p.query_floats() * sizeof(float), cudaMemcpyHostToDevice,
                               stream));
  timer.end();
  timer.begin("kernel");
  if (p.m > 0) search(static_cast<const float*>(queries.data()), indices.data(), distances.data());
  timer.end();
  timer.begin("d2h");
  KNN_CUDA_TRY(cudaMemcpyAsync(out.indices, indices.data(), p.result_slots() * sizeof(std::int32_t),
                               cudaMemcpyDeviceToHost, stream));
  KNN_CUDA_TRY(cudaMemcpyAsync(out.distances, distances.data(), p.result_slots() * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
  timer.end();
  KNN_CUDA_TRY(cudaStreamSynchronize(stream));
  timer.report(ctx.timing);
}

}  // namespace knn::tree::gpu
