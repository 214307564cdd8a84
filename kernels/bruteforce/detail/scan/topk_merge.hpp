#pragma once
// The merge of per-thread partial top-k lists (v15): each query's partial lists are packed into
// (distance, index) keys, sorted per query by CUB's segmented sort, and the first topk kept. The
// key's unsigned order is knn::before's, so the answer does not depend on how the rows were split.
//
// CUB's segmented sort gives each segment to one block: with fewer queries than the device has SMs
// and many entries per query (1 query, 2^20 rows, topk 64: 2^20 entries), one block sorted them all
// (10 ms on an H100). Then reduction passes come first (merge_passes in scan_plan.hpp): each query's
// entries are cut into runs of merge_run_length(topk) entries, every run sorted (m × runs segments
// fill the device) and only its first topk kept, until a query has at most kMergeRunsLeft runs;
// the last sort is the one above. Exact: a key of a query's topk is among the topk of its own run.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/buffers.hpp"
#include "core/cuda/stream.hpp"
#include "kernels/bruteforce/detail/scan/scan_plan.hpp"

namespace knn::gpu {

// Answers the m queries from `per_query` partial entries each ([q · per_query + e]).
class PartialMerge {
 public:
  // Allocates everything on `stream` (stream-ordered); with `packs` false, no buffer for packed
  // keys (enqueue_keys only); with `reduce` false, no reduction passes (the sort alone).
  PartialMerge(int m, long long per_query, int topk, cudaStream_t stream, bool packs = true, bool reduce = true);
  // Enqueues the merge on the stream given at construction; writes m × topk answers.
  void enqueue(const float* partial_distances, const std::int32_t* partial_indices, std::int32_t* indices,
               float* distances);
  // The same from entries already packed, in any order within a query (the filters' key lists).
  void enqueue_keys(const unsigned long long* keys, std::int32_t* indices, float* distances);
  // Device bytes the merge allocates (CUB's scratch estimated as one more key buffer).
  static std::size_t device_bytes(int m, long long per_query);
  // "a segmented sort" or "a segmented sort after 2 passes that keep the best 8 of every 2048".
  std::string describe() const;

 private:
  int m_, topk_;
  long long per_query_;
  std::vector<long long> passes_;  // per query entries at the start of each reduction pass
  cudaStream_t stream_;
  cuda::StreamBuffer<unsigned long long> keys_, sorted_, reduced_;
  cuda::StreamBuffer<long long> begins_, ends_;
  cuda::StreamBuffer<unsigned char> scratch_;
  std::size_t scratch_bytes_ = 0;
};

// A chunked search's phases from its events: "h2d" (start to the last chunk's copy), "kernel" (the
// first chunk's search to the last), "merge" and "d2h". Spans, not exclusive shares: "h2d" and "kernel"
// overlap by as much as the chunks overlap, so the phases add up to more than the call.
inline void report_chunk_phases(TimingSink& timing, const cuda::Event& start, const cuda::Event& copied,
                                const cuda::Event& search_start, const cuda::Event& searched, const cuda::Event& merged,
                                const cuda::Event& done) {
  timing.add("h2d", cuda::elapsed_ms(start, copied));
  timing.add("kernel", cuda::elapsed_ms(search_start, searched));
  timing.add("merge", cuda::elapsed_ms(searched, merged));
  timing.add("d2h", cuda::elapsed_ms(merged, done));
}

// `count` keys that no candidate beats (+inf, index -1): what atomicMin'd best keys start from.
void fill_worst_keys(unsigned long long* keys, long long count, cudaStream_t stream);
// Answers m queries with topk = 1 from one packed key each.
void unpack_best(const unsigned long long* keys, int m, std::int32_t* indices, float* distances, cudaStream_t stream);
// As unpack_best, on the host (v15.host_keys: the keys downloaded into pinned memory).
void unpack_best_on_host(const unsigned long long* keys, int m, std::int32_t* indices, float* distances);

}  // namespace knn::gpu
