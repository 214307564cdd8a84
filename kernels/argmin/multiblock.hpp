#pragma once
// v7's path, shared with v8 and v9: several blocks per query so every SM has work even when m = 1.
#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/argmin/candidate.hpp"
#include "kernels/argmin/gpu_frame.hpp"

namespace knn::gpu {

// How a search block reduces its threads' candidates: the run-time tree loop (v7, v8) or the
// compile-time unrolled tree with a shuffle-reduced last warp (v9).
enum class BlockReduce { tree, unrolled };

// Where a query's per-block candidates go after the search: downloaded and reduced to its answer on
// the host (v7–v9, the seed's choice, which measured faster), or left in device memory for the
// caller (the test-only t5 reduces them in a GPU kernel, so the comparison can be repeated).
enum class SecondLevel { host, caller };

// Upper bound of the device bytes MultiblockSearch allocates on a device with sm_count SMs (an SM
// holds at most 2048 threads, so at most 2 search blocks of 1024 are resident on it).
std::size_t multiblock_device_bytes(int m, int n, int dim, int sm_count);

// Answers m queries against n references (dimension dim) on the frame's device: uploads both,
// transposes the references to SoA, runs blocks_per_query() blocks per query, each over a strided
// share of the references, each block leaving one candidate; with SecondLevel::host, finish_on_host
// reduces each query's candidates on the host. Answers are indices into the n references given.
class MultiblockSearch {
 public:
  // Plans the grid (occupancy × SM count of the current device) and allocates everything.
  MultiblockSearch(DeviceFrame& frame, int m, int n, int dim, BlockReduce reduce,
                   SecondLevel second_level);
  // Waits for the frame's stream when a download may still be writing the pinned block, so the block
  // goes back to its pool only once nothing writes it (after an exception between enqueue and wait).
  ~MultiblockSearch();
  MultiblockSearch(const MultiblockSearch&) = delete;
  MultiblockSearch& operator=(const MultiblockSearch&) = delete;

  // Enqueues: "h2d" (queries and references, one phase), "transpose", "kernel" (the search, then
  // whatever `after_search` enqueues on the frame's stream once the search launch is checked).
  void enqueue(const float* host_queries, const float* host_references,
               const std::function<void()>& after_search = nullptr);

  // The m × blocks_per_query() candidates in device memory, query-major, once the search has run.
  const Candidate* partials() const { return partials_; }

  // SecondLevel::host, after enqueue(): downloads ("d2h") the m × blocks_per_query() candidates,
  // query-major, into a pooled page-locked host block, waits for the frame's stream, reports the
  // frame's phases to `sink`, then reduces each query's candidates on the host into `indices` and
  // `distances` (phase "host_reduce").
  void finish_on_host(TimingSink& sink, std::int32_t* indices, float* distances);
  int blocks_per_query() const { return blocks_per_query_; }
  int resident_blocks() const { return resident_blocks_; }  // occupancy per SM × SMs

 private:
  DeviceFrame& frame_;
  int m_, n_, dim_;
  BlockReduce reduce_;
  SecondLevel second_level_;
  int resident_blocks_ = 0;
  int blocks_per_query_ = 1;
  cuda::PinnedStaging<Candidate> staging_;  // the downloaded candidates (SecondLevel::host)
  // Every buffer below is carved from one stream-ordered allocation: one pool call and one free per
  // GPU and call, and neither waits for the device.
  cuda::StreamBuffer<unsigned char> slab_;
  float* queries_ = nullptr;
  float* references_ = nullptr;  // as given (AoS)
  float* soa_ = nullptr;
  Candidate* partials_ = nullptr;  // m × blocks_per_query, query-major
};

}  // namespace knn::gpu
