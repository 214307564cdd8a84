#pragma once
// SeedCollect, the device side of v15's candidate buffers (kernels/bruteforce/detail/seed/seed_collect.hpp
// says what they are for; seed_collect.cu runs them).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/cuda/buffers.hpp"
#include "kernels/bruteforce/detail/seed/seed_collect.hpp"

namespace knn::gpu {

class SeedCollect {
 public:
  // Allocates on `stream` (stream-ordered) the buffers of `plan` for m queries against n rows of
  // k = dim, once the plan is balanced (balance_collect) for the blocks of its kernel that
  // `sm_count` SMs hold at once.
  SeedCollect(const CollectPlan& plan, int m, int n, int dim, int topk, int sm_count, cudaStream_t stream);
  // Enqueues on `stream` the collecting kernel over all n rows and the selection, which writes each
  // query's topk (distance, index) pairs, ascending, to distances/indices[q · topk + s] ((+inf, -1)
  // where fewer rows exist). `order` and `bound` are the seed's (ScanSeed::order(), bound()).
  void enqueue(const float* queries, const float* references, int dim, int n, bool self_join, const std::int32_t* order,
               const float* bound, std::int32_t* indices, float* distances, cudaStream_t stream);
  // Enqueues on `stream`, after the search, the copy of the keys appended to the buffers and the
  // buffers cut back to topk, in all (into host memory of this object: path() reads them once the
  // stream has run, so the call waits for the device once, not twice).
  void download_counts(cudaStream_t stream);
  // The path's text, with those counts.
  std::string path(int dim) const;
  // The most any device's balance can take (collect_max_splits).
  static std::size_t device_bytes(const CollectPlan& plan, int m, int n);

 private:
  bool tensor_ran() const;            // after the stream has run (download_counts)
  unsigned long long gate_max() const;  // the most queries below the gate's level for the tensor cores
  static constexpr int kStats = 2 + kCollectTcGateLevels;
  CollectPlan plan_;
  std::optional<CollectPlan> tensor_;  // the tensor cores' plan the gate may choose instead of plan_
  int m_, topk_;
  cuda::StreamBuffer<unsigned long long> keys_, stats_;
  cuda::StreamBuffer<int> counts_;
  unsigned long long host_counts_[kStats] = {};  // appended, cuts, the gate's counts by level
};

}  // namespace knn::gpu
