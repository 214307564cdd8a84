#pragma once
// The merge of per-thread partial top-k lists (v15): each query's partial lists are packed into
// (distance, index) keys, sorted per query by CUB's segmented sort, and the first topk kept. The
// key's unsigned order is knn::before's, so the answer does not depend on how the rows were split.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/cuda/buffers.hpp"

namespace knn::gpu {

// Answers the m queries from `per_query` partial entries each ([q · per_query + e]).
class PartialMerge {
 public:
  // Allocates everything on `stream` (stream-ordered).
  PartialMerge(int m, long long per_query, int topk, cudaStream_t stream);
  // Enqueues the merge on the stream given at construction; writes m × topk answers.
  void enqueue(const float* partial_distances, const std::int32_t* partial_indices, std::int32_t* indices,
               float* distances);
  // Device bytes the merge allocates (CUB's scratch estimated as one more key buffer).
  static std::size_t device_bytes(int m, long long per_query);

 private:
  int m_, topk_;
  long long per_query_;
  cudaStream_t stream_;
  cuda::StreamBuffer<unsigned long long> keys_, sorted_;
  cuda::StreamBuffer<long long> offsets_;
  cuda::StreamBuffer<unsigned char> scratch_;
  std::size_t scratch_bytes_ = 0;
};

// `count` keys that no candidate beats (+inf, index -1): what atomicMin'd best keys start from.
void fill_worst_keys(unsigned long long* keys, long long count, cudaStream_t stream);
// Answers m queries from topk packed keys each, in any order ([q · topk + s]; the filters' lists):
// sorted per query by CUB's segmented sort. Allocates its buffers on `stream`.
void sort_key_lists(const unsigned long long* keys, int m, int topk, std::int32_t* indices, float* distances,
                    cudaStream_t stream);
// Device bytes sort_key_lists allocates (CUB's scratch estimated as one more key buffer).
std::size_t sort_key_lists_bytes(int m, int topk);
// Answers m queries with topk = 1 from one packed key each.
void unpack_best(const unsigned long long* keys, int m, std::int32_t* indices, float* distances, cudaStream_t stream);

}  // namespace knn::gpu
