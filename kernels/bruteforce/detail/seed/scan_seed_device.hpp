#pragma once
// ScanSeed, the device side of v15's seed (kernels/bruteforce/detail/seed/scan_seed.hpp says what the bound
// is for; scan_seed.cu runs it).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/cuda/buffers.hpp"
#include "kernels/bruteforce/detail/seed/scan_seed.hpp"

namespace knn::gpu {

// The device side: Morton codes of the references (and of the queries unless self-join), sorted
// by CUB; then one thread per query computes its window's distances and writes its bound.
class ScanSeed {
 public:
  // Allocates on `stream` (stream-ordered) for m queries and n rows of `dim` dimensions.
  ScanSeed(int m, int n, int dim, bool self_join, cudaStream_t stream);
  // Enqueues the seed on `stream` (the queries and the references must be on the device by then).
  void enqueue(const float* queries, const float* references, int topk, int window, cudaStream_t stream);
  // The queries in Morton order (m entries) and each query's bound (m entries, by query index):
  // the next float above its topk-th window distance, +inf when its window has fewer rows.
  const std::int32_t* order() const;
  const float* bound() const { return bound_.data(); }
  static std::size_t device_bytes(int m, int n, int dim, bool self_join);

 private:
  int m_, n_, dim_;
  bool self_join_;
  cuda::StreamBuffer<unsigned> range_;  // per dimension: the references' least and greatest value (ordered bits)
  cuda::StreamBuffer<unsigned long long> codes_, sorted_codes_, query_codes_, sorted_query_codes_;
  cuda::StreamBuffer<std::int32_t> rows_, row_order_, queries_, query_order_;
  cuda::StreamBuffer<float> bound_;
  cuda::StreamBuffer<unsigned char> scratch_;
  std::size_t scratch_bytes_ = 0;
};

}  // namespace knn::gpu
