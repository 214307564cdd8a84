#pragma once
// SeedCollect, the device side of v15's candidate buffers (kernels/common/seed_collect.hpp says
// what they are for; seed_collect.cu runs them).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cuda/buffers.hpp"
#include "kernels/common/seed_collect.hpp"

namespace knn::gpu {

class SeedCollect {
 public:
  // Allocates on `stream` (stream-ordered) the buffers of `plan` for m queries.
  SeedCollect(const CollectPlan& plan, int m, int topk, cudaStream_t stream);
  // Enqueues on `stream` the collecting kernel over all n rows and the selection, which writes each
  // query's topk (distance, index) pairs, ascending, to distances/indices[q · topk + s] ((+inf, -1)
  // where fewer rows exist). `order` and `bound` are the seed's (ScanSeed::order(), bound()).
  void enqueue(const float* queries, const float* references, int dim, int n, bool self_join, const std::int32_t* order,
               const float* bound, std::int32_t* indices, float* distances, cudaStream_t stream);
  // After the stream has run (it waits for it): the path's text, with the keys appended to the
  // buffers and the buffers cut back to topk, in all.
  std::string path(int dim, cudaStream_t stream) const;
  static std::size_t device_bytes(const CollectPlan& plan, int m);

 private:
  CollectPlan plan_;
  int m_, topk_;
  cuda::StreamBuffer<unsigned long long> keys_, stats_;
  cuda::StreamBuffer<int> counts_;
};

}  // namespace knn::gpu
