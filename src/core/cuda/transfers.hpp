#pragma once
// A problem's inputs to the device and its answers back, ordered on one stream: the copies every
// single-GPU version makes, written once.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda/error.hpp"
#include "core/cuda/stream.hpp"
#include "core/problem.hpp"

namespace knn::cuda {

// The references into `references` (n × dim floats) and, unless the problem is a self-join (whose
// queries are the references), the queries into `own_queries` (m × dim floats).
inline void upload_inputs(const Problem& p, float* references, float* own_queries, cudaStream_t stream) {
  KNN_CUDA_TRY(cudaMemcpyAsync(references, p.references, p.reference_floats() * sizeof(float), cudaMemcpyHostToDevice,
                               stream));
  if (!p.self_join)
    KNN_CUDA_TRY(cudaMemcpyAsync(own_queries, p.queries, p.query_floats() * sizeof(float), cudaMemcpyHostToDevice,
                                 stream));
}

// The device address of pinned host memory (cudaMallocHost, mapped through unified addressing): a
// kernel may write a caller's output there directly. Null for anything else (pageable memory, a
// device pointer).
inline void* mapped_address(void* host) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, host) != cudaSuccess) {
    (void)cudaGetLastError();  // not a pointer the runtime knows: clear the error, copy instead
    return nullptr;
  }
  return attr.type == cudaMemoryTypeHost ? attr.devicePointer : nullptr;
}

// The m × topk answers (device `indices` and `distances`) into the harness's buffers.
inline void download_answers(const Problem& p, const std::int32_t* indices, const float* distances, Neighbors out,
                             cudaStream_t stream) {
  if (p.result_slots() == 0) return;
  KNN_CUDA_TRY(cudaMemcpyAsync(out.indices, indices, p.result_slots() * sizeof(std::int32_t), cudaMemcpyDeviceToHost,
                               stream));
  KNN_CUDA_TRY(cudaMemcpyAsync(out.distances, distances, p.result_slots() * sizeof(float), cudaMemcpyDeviceToHost,
                               stream));
}

// A call's last phase: the answers' download timed as "d2h", then the wait for the stream, then
// every phase of `timer` handed to the sink.
inline void finish_with_answers(PhaseTimer& timer, const Problem& p, const std::int32_t* indices, const float* distances,
                                Neighbors out, cudaStream_t stream, TimingSink& sink) {
  timer.begin("d2h");
  download_answers(p, indices, distances, out, stream);
  timer.end();
  KNN_CUDA_TRY(cudaStreamSynchronize(stream));
  timer.report(sink);
}

}  // namespace knn::cuda
