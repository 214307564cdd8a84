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
  // Allocates everything on `stream` (stream-ordered); with `packs` false, no buffer for packed
  // keys (enqueue_keys only).
  PartialMerge(int m, long long per_query, int topk, cudaStream_t stream, bool packs = true);
  // Enqueues the merge on the stream given at construction; writes m × topk answers.
  void enqueue(const float* partial_distances, const std::int32_t* partial_indices, std::int32_t* indices,
               float* distances);
  // The same from entries already packed, in any order within a query (the filters' key lists).
  void enqueue_keys(const unsigned long long* keys, std::int32_t* indices, float* distances);
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
// Answers m queries with topk = 1 from one packed key each.
void unpack_best(const unsigned long long* keys, int m, std::int32_t* indices, float* distances, cudaStream_t stream);

}  // namespace knn::gpu
