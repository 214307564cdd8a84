// PartialMerge: pack, reduce long segments run by run, segmented sort (CUB), keep the first topk of each query.
#include "kernels/bruteforce/detail/scan/topk_merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <cub/device/device_segmented_sort.cuh>

#include "core/cuda/device.hpp"
#include "core/cuda/error.hpp"

namespace knn::gpu {
namespace {

constexpr int kThreads = 256;

// One thread per partial entry: its (distance, index) as one key (see scan::pack).
__global__ void pack_kernel(const float* __restrict__ distances, const std::int32_t* __restrict__ indices,
                            long long count, unsigned long long* __restrict__ keys) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count; e += (long long)gridDim.x * blockDim.x)
    keys[e] = (static_cast<unsigned long long>(__float_as_uint(distances[e])) << 32) |
              static_cast<std::uint32_t>(indices[e]);
}

constexpr unsigned long long kWorstKey = 0x7f800000ffffffffULL;  // (+inf, index -1): sorts after every candidate

// Run j of query q: entries [q · per + j · run, min(that + run, (q + 1) · per)).
__device__ __forceinline__ void run_bounds(long long s, long long runs, long long per, long long run, long long& begin,
                                           long long& end) {
  const long long q = s / runs, j = s % runs;
  begin = q * per + j * run;
  end = min(begin + run, (q + 1) * per);
}

// One thread per run: its begin and end offsets (CUB's segments).
__global__ void runs_kernel(long long* __restrict__ begins, long long* __restrict__ ends, int m, long long per, long long run) {
  const long long runs = (per + run - 1) / run;
  for (long long s = blockIdx.x * (long long)blockDim.x + threadIdx.x; s < m * runs; s += (long long)gridDim.x * blockDim.x)
    run_bounds(s, runs, per, run, begins[s], ends[s]);
}

// One thread per kept entry: entry t of sorted run s (the worst key where the run is shorter than topk).
__global__ void keep_kernel(const unsigned long long* __restrict__ sorted, int m, long long per, long long run, int topk,
                            unsigned long long* __restrict__ kept) {
  const long long runs = (per + run - 1) / run, slots = m * runs * topk;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < slots; e += (long long)gridDim.x * blockDim.x) {
    long long begin = 0, end = 0;
    run_bounds(e / topk, runs, per, run, begin, end);
    const long long at = begin + e % topk;
    kept[e] = at < end ? sorted[at] : kWorstKey;
  }
}

// One thread per answer slot: entry s of query q's sorted keys. v0 answers a query with no
// candidate at all (self-join, n = 1) with index 0 when topk = 1, and -1 in every empty slot
// otherwise; so does this.
__global__ void unpack_kernel(const unsigned long long* __restrict__ keys, int m, long long per_query, int topk,
                              std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  const long long slots = (long long)m * topk;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < slots; e += (long long)gridDim.x * blockDim.x) {
    const long long q = e / topk, s = e % topk;
    const unsigned long long key = keys[q * per_query + s];
    const std::int32_t index = static_cast<std::int32_t>(static_cast<std::uint32_t>(key & 0xffffffffu));
    indices[e] = topk == 1 && index < 0 ? 0 : index;
    distances[e] = __uint_as_float(static_cast<unsigned>(key >> 32));
  }
}

__global__ void fill_kernel(unsigned long long* keys, long long count) {
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < count; e += (long long)gridDim.x * blockDim.x)
    keys[e] = kWorstKey;
}

int grid_for(long long count) { return int(std::min<long long>(4096, std::max<long long>(1, cuda::divup(count, kThreads)))); }

}  // namespace

std::string PartialMerge::describe() const {
  const std::size_t n = passes_.size();
  if (n == 0) return "a segmented sort";
  return fmt::format("a segmented sort after {} pass{} that keep{} the best {} of every {}", n, n == 1 ? "" : "es",
                     n == 1 ? "s" : "", topk_, merge_run_length(topk_));
}

PartialMerge::PartialMerge(int m, long long per_query, int topk, cudaStream_t stream, bool packs, bool reduce)
    : m_(m), topk_(topk), per_query_(per_query), stream_(stream),
      keys_(packs ? std::size_t(m) * per_query : 0, stream), sorted_(std::size_t(m) * per_query, stream) {
  int device = 0, sms = 0;
  KNN_CUDA_TRY(cudaGetDevice(&device));
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (reduce) passes_ = merge_passes(m, per_query, topk, sms);
  const long long run = merge_run_length(topk);
  const long long first_runs = passes_.empty() ? 1 : cuda::divup(per_query, run);
  if (!passes_.empty()) reduced_ = cuda::StreamBuffer<unsigned long long>(std::size_t(m) * first_runs * topk, stream);
  begins_ = cuda::StreamBuffer<long long>(std::size_t(m) * first_runs, stream);
  ends_ = cuda::StreamBuffer<long long>(std::size_t(m) * first_runs, stream);
  // CUB's scratch for the largest of the sorts: each pass's, then the last one's.
  const auto need = [&](long long count, long long segments) {
    std::size_t bytes = 0;
    KNN_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(nullptr, bytes, keys_.data(), sorted_.data(), count, segments,
                                                    begins_.data(), ends_.data(), stream_));
    scratch_bytes_ = std::max(scratch_bytes_, bytes);
  };
  long long per = per_query;
  for (const long long start : passes_) {
    need((long long)m * start, (long long)m * cuda::divup(start, run));
    per = cuda::divup(start, run) * (long long)topk;
  }
  need((long long)m * per, m);
  scratch_ = cuda::StreamBuffer<unsigned char>(scratch_bytes_, stream_);
}

void PartialMerge::enqueue(const float* partial_distances, const std::int32_t* partial_indices, std::int32_t* indices,
                           float* distances) {
  const long long count = (long long)m_ * per_query_;
  pack_kernel<<<grid_for(count), kThreads, 0, stream_>>>(partial_distances, partial_indices, count, keys_.data());
  KNN_CUDA_CHECK_LAUNCH();
  enqueue_keys(keys_.data(), indices, distances);
}

void PartialMerge::enqueue_keys(const unsigned long long* keys, std::int32_t* indices, float* distances) {
  // Sorts query-major entries, `per` per query, in runs of `run` (one run per query: the last sort).
  const auto sort = [&](const unsigned long long* in, long long per, long long run) {
    const long long segments = (long long)m_ * cuda::divup(per, run);
    runs_kernel<<<grid_for(segments), kThreads, 0, stream_>>>(begins_.data(), ends_.data(), m_, per, run);
    KNN_CUDA_CHECK_LAUNCH();
    KNN_CUDA_TRY(cub::DeviceSegmentedSort::SortKeys(scratch_.data(), scratch_bytes_, in, sorted_.data(), (long long)m_ * per,
                                                    segments, begins_.data(), ends_.data(), stream_));
  };
  const long long run = merge_run_length(topk_);
  const unsigned long long* in = keys;
  long long per = per_query_;
  for (const long long start : passes_) {  // start == per
    sort(in, start, run);
    keep_kernel<<<grid_for((long long)m_ * cuda::divup(start, run) * topk_), kThreads, 0, stream_>>>(
        sorted_.data(), m_, start, run, topk_, reduced_.data());
    KNN_CUDA_CHECK_LAUNCH();
    in = reduced_.data();
    per = cuda::divup(start, run) * (long long)topk_;
  }
  sort(in, per, per);
  unpack_kernel<<<grid_for((long long)m_ * topk_), kThreads, 0, stream_>>>(sorted_.data(), m_, per, topk_, indices,
                                                                          distances);
  KNN_CUDA_CHECK_LAUNCH();
}

// The reduction passes' buffers are bounded by per_query / 8 kept keys and per_query / 1024 + 1
// runs per query (runs of at least kMergeMinRun and 16 × topk entries).
std::size_t PartialMerge::device_bytes(int m, long long per_query) {
  return std::size_t(m) * per_query * 3 * sizeof(unsigned long long) + std::size_t(m) * (per_query / 8) * sizeof(unsigned long long) +
         2 * std::size_t(m) * (per_query / 1024 + 1) * sizeof(long long);
}

void fill_worst_keys(unsigned long long* keys, long long count, cudaStream_t stream) {
  fill_kernel<<<grid_for(count), kThreads, 0, stream>>>(keys, count);
  KNN_CUDA_CHECK_LAUNCH();
}

void unpack_best(const unsigned long long* keys, int m, std::int32_t* indices, float* distances, cudaStream_t stream) {
  unpack_kernel<<<grid_for(m), kThreads, 0, stream>>>(keys, m, 1, 1, indices, distances);
  KNN_CUDA_CHECK_LAUNCH();
}

void unpack_best_on_host(const unsigned long long* keys, int m, std::int32_t* indices, float* distances) {
  for (int q = 0; q < m; ++q) {  // as unpack_kernel with topk 1
    const auto index = static_cast<std::int32_t>(static_cast<std::uint32_t>(keys[q] & 0xffffffffu));
    indices[q] = index < 0 ? 0 : index;
    const auto bits = static_cast<std::uint32_t>(keys[q] >> 32);
    std::memcpy(&distances[q], &bits, sizeof bits);
  }
}

}  // namespace knn::gpu
