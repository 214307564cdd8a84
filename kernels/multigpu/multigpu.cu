// v8/v9's multi-GPU driver (kernels/multigpu/multigpu.hpp).
//
// No lock guards the results: each GPU's thread writes only its own slot (answers, phase times,
// error); after a barrier the threads merge disjoint ranges of queries. The harness's TimingSink is
// not thread-safe, so each thread reports its PhaseTimer into its own sink, copied into ctx.timing
// (add_device) afterwards.
// Phase "gpu_thread" is each thread's host wall time for its slice (set-up, enqueue, wait, tear-down);
// the call's time beyond the slowest thread and "merge" is the parallel region's fork and join.
// Exceptions cannot leave an OpenMP region: each thread stores its own, and the first (in device
// order) is rethrown on the calling thread once all threads are done.
#include "kernels/multigpu/multigpu.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace knn::gpu {
namespace {

struct Slice {
  int begin = 0;
  int count = 0;
};

// What one GPU's thread leaves behind.
struct GpuResult {
  std::vector<std::int32_t> indices;  // within the slice
  std::vector<float> distances;
  TimingSink timing;
  int blocks_per_query = 0;
  std::exception_ptr error;
};

std::vector<Slice> split_evenly(int n, int parts) {
  std::vector<Slice> slices(parts);
  const int base = n / parts, longer = n % parts;
  int begin = 0;
  for (int g = 0; g < parts; ++g) {
    slices[g] = {begin, base + (g < longer ? 1 : 0)};
    begin += slices[g].count;
  }
  return slices;
}

// v7's path on one GPU for one slice (its second level reduced by this thread); runs on that GPU's host thread.
void search_slice(const Problem& p, int ordinal, const Slice& slice, BlockReduce reduce, GpuResult& result) {
  DeviceFrame frame(ordinal);
  MultiblockSearch search(frame, p.m, slice.count, p.dim, reduce, SecondLevel::host);
  search.enqueue(p.queries, p.references + std::size_t(slice.begin) * std::size_t(p.dim));
  result.indices.resize(std::size_t(p.m));  // while the GPU works
  result.distances.resize(std::size_t(p.m));
  search.finish_on_host(result.timing, result.indices.data(), result.distances.data());
  result.blocks_per_query = search.blocks_per_query();
}

}  // namespace

std::size_t multigpu_device_bytes(const Problem& p, const Environment& env) {
  const int gpus = std::max<int>(1, int(env.devices.size()));
  int sms = 0;
  for (const DeviceInfo& d : env.devices) sms = std::max(sms, d.sm_count);
  return multiblock_device_bytes(p.m, cuda::divup(p.n, gpus), p.dim, sms);
}

void run_multigpu_argmin(const Problem& p, Neighbors out, RunContext& ctx, BlockReduce reduce) {
  const std::vector<DeviceInfo>& devices = ctx.env.devices;
  const int gpus = int(devices.size());
  if (gpus == 0) throw std::runtime_error("no CUDA device selected");
  const std::vector<Slice> slices = split_evenly(p.n, gpus);
  std::vector<GpuResult> results(gpus);

  // Each GPU's answer to q, as a global index; slices ascend in index, so the (distance, index)
  // order keeps the smallest global index among equal distances. A slice whose distances were all
  // infinite answers (inf, slice begin); the answer is (inf, 0) only when every slice did so.
  const auto merge_queries = [&](int first, int last) {
    for (int q = first; q < last; ++q) {
      const Candidate best = merge_candidates(no_candidate(), 0, gpus, 1, [&](int g) {
        if (slices[g].count == 0) return no_candidate();
        return Candidate{results[g].distances[q], slices[g].begin + results[g].indices[q]};
      });
      store_answer(best, q, out.indices, out.distances);
    }
  };
  bool failed = false;
  std::vector<double> merge_ms(gpus, 0.0);

#pragma omp parallel num_threads(gpus)
  {
    // OpenMP may grant fewer threads than asked (nesting, thread limits): then threads take turns.
    const int threads = omp_get_num_threads();
    const int me = omp_get_thread_num();
    for (int g = me; g < gpus; g += threads) {
      try {
        if (slices[g].count > 0) {
          const auto start = std::chrono::steady_clock::now();
          search_slice(p, devices[g].ordinal, slices[g], reduce, results[g]);
          // Host time of the whole slice, set-up and tear-down included: what the GPU's thread costs
          // beyond its device phases.
          results[g].timing.add("gpu_thread", std::chrono::duration<double, std::milli>(
                                                  std::chrono::steady_clock::now() - start).count());
        }
      } catch (...) {
        results[g].error = std::current_exception();
      }
    }
    // Every GPU's answers are in: the threads merge disjoint ranges of queries (no lock; the barrier
    // publishes the other threads' results).
#pragma omp barrier
#pragma omp single
    for (const GpuResult& r : results) failed = failed || bool(r.error);
    // (the implicit barrier after `single` publishes `failed`)
    if (!failed) {
      const auto start = std::chrono::steady_clock::now();
      const long long first = static_cast<long long>(p.m) * me / threads;
      const long long last = static_cast<long long>(p.m) * (me + 1) / threads;
      merge_queries(int(first), int(last));
      merge_ms[me] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
  }
  for (const GpuResult& r : results)
    if (r.error) std::rethrow_exception(r.error);
  const double merge_time = *std::max_element(merge_ms.begin(), merge_ms.end());  // the slowest thread's share

  std::map<std::string, double> slowest;
  ctx.devices_used.clear();
  int used = 0;
  for (int g = 0; g < gpus; ++g) {
    if (slices[g].count == 0) continue;
    ++used;
    ctx.devices_used.push_back(devices[g].ordinal);
    for (const auto& [phase, ms] : results[g].timing.phases()) {
      ctx.timing.add_device(devices[g].ordinal, phase, ms);
      slowest[phase] = std::max(slowest[phase], ms);
    }
  }
  for (const auto& [phase, ms] : slowest) ctx.timing.add(phase, ms);
  ctx.timing.add("merge", merge_time);

  if (gpus == 1)
    ctx.path = fmt::format("1 GPU: the only selected device takes all n references, {} blocks per query",
                           results[0].blocks_per_query);
  else if (used < gpus)
    ctx.path = fmt::format("{} of {} GPUs used: n={} leaves {} slices empty", used, gpus, p.n, gpus - used);
  else
    ctx.path = fmt::format("{} GPUs, slices of {} references, {} blocks per query on the first",
                           gpus,
                           slices.front().count == slices.back().count
                               ? fmt::format("{}", slices.front().count)
                               : fmt::format("{}-{}", slices.back().count, slices.front().count),
                           results[0].blocks_per_query);
}

}  // namespace knn::gpu
