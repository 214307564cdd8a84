// v7's kernels and launcher (kernels/argmin/multiblock.hpp); v8 and v9 run the same path per GPU.
//
// Grid: B blocks per query, B = ceil(resident / m) with resident = the occupancy calculator's blocks
// per SM × the SM count, both read from the device; B is capped at ceil(n / 1024) so no block is
// launched that would scan nothing. With m ≥ resident, B = 1 (v4's grid).
//
// The second-level reduction (B candidates per query) runs on the host, as in the seed, decided by
// measurement: on an H100, v7 with a one-warp-per-query GPU kernel instead (now the test-only t5)
// was 0.008–0.018 ms slower on cases 0–7 (one more launch, and two answer arrays to download instead
// of one candidate array) and equal within noise on cases 8–11, where the m·B candidates are a few
// KiB and the host loop takes microseconds (results/h100/v7-second-level.json; the candidates land
// in pooled pinned memory, so their download is one DMA).
#include "kernels/argmin/multiblock.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>

#include "kernels/argmin/argmin.cuh"
#include "kernels/argmin/transpose.hpp"

namespace knn::gpu {
namespace {

// One thread's scan, two references per step: positions j and j + stride share each query load and
// their loads are independent, so twice as many are in flight as with one reference per step. Each
// sum runs over the dimensions in order (v0's arithmetic), and j is compared before j + stride with a
// strict `<`, so the thread still keeps the first of equal distances.
template <class Query>
__device__ __forceinline__ Candidate scan_pairs(int dim, const Query& query, const SoaReferences& refs, long long j,
                                                long long n, long long stride) {
  Candidate best = no_candidate();
  for (; j + stride < n; j += 2 * stride) {
    float sum0 = 0.f, sum1 = 0.f;
    for (int t = 0; t < dim; ++t) {
      const float q = query(t);
      const float diff0 = q - refs(j, t);
      const float diff1 = q - refs(j + stride, t);
      sum0 += diff0 * diff0;
      sum1 += diff1 * diff1;
    }
    if (sum0 < best.distance) best = {sum0, static_cast<std::int32_t>(j)};
    if (sum1 < best.distance) best = {sum1, static_cast<std::int32_t>(j + stride)};
  }
  if (j < n) {
    const float d = squared_distance(dim, query, refs, j);
    if (d < best.distance) best = {d, static_cast<std::int32_t>(j)};
  }
  return best;
}

// Block blockIdx.x searches part blockIdx.x % B of query blockIdx.x / B: one thread scans references
// part·1024 + threadIdx.x, then every B·1024-th (coalesced SoA reads, two per step), keeping its first minimum; the
// block then reduces the threads' (distance, index) pairs and thread 0 writes the block's candidate.
//
// Code generation, measured on an H100 (median ms of v7 / v9 on cases 10 and 11): one reference per
// step with the compiler's default register budget (32) gave 2.95 / 2.86 and 7.14 / 12.25 (v9's
// inlined unrolled reduction changed the scan's schedule); two references per step with
// __launch_bounds__(1024, 1), which lets the compiler use up to 64 registers (one block of 1024 per
// SM), gave 2.42 / 2.41 and 6.91 / 6.59; forcing two blocks per SM made the pair loop spill.
template <BlockReduce kReduce>
__global__ void __launch_bounds__(kSearchThreads, 1)
    multiblock_kernel(int dim, int n, int blocks_per_query, const float* __restrict__ queries,
                      const float* __restrict__ soa, Candidate* __restrict__ partials) {
  __shared__ float s_distance[kSearchThreads];
  __shared__ std::int32_t s_index[kSearchThreads];
  const int q = blockIdx.x / blocks_per_query;
  const int part = blockIdx.x - q * blocks_per_query;
  const SoaReferences refs{soa, n};
  const long long stride = static_cast<long long>(blocks_per_query) * blockDim.x;
  with_block_query(queries + std::size_t(q) * std::size_t(dim), dim, [&](const auto& query) {
    Candidate c = scan_pairs(dim, query, refs, static_cast<long long>(part) * blockDim.x + threadIdx.x, n, stride);
    if constexpr (kReduce == BlockReduce::unrolled)
      c = block_argmin_unrolled<kSearchThreads>(c, s_distance, s_index);
    else
      c = block_argmin_tree(c, s_distance, s_index);
    if (threadIdx.x == 0) partials[blockIdx.x] = c;
  });
}

using SearchKernel = void (*)(int, int, int, const float*, const float*, Candidate*);

SearchKernel search_kernel(BlockReduce reduce) {
  return reduce == BlockReduce::unrolled ? multiblock_kernel<BlockReduce::unrolled>
                                         : multiblock_kernel<BlockReduce::tree>;
}

// The search kernel's SM count and resident blocks per SM on a device. The occupancy answer is
// cached per process (cuda::resident_blocks_per_sm); the SM count is a runtime attribute lookup.
struct Occupancy {
  int sms = 0;
  int per_sm = 0;
};

Occupancy occupancy(int ordinal, BlockReduce reduce) {
  Occupancy o;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&o.sms, cudaDevAttrMultiProcessorCount, ordinal));
  o.per_sm = cuda::resident_blocks_per_sm(ordinal, reinterpret_cast<const void*>(search_kernel(reduce)), kSearchThreads);
  return o;
}

constexpr std::size_t kSlabAlignment = 256;  // each carved buffer starts on a 256-byte boundary
constexpr int kSlabParts = 4;

std::size_t aligned(std::size_t bytes) { return (bytes + kSlabAlignment - 1) / kSlabAlignment * kSlabAlignment; }

}  // namespace

std::size_t multiblock_device_bytes(int m, int n, int dim, int sm_count) {
  const std::size_t partials = std::size_t(m) + std::size_t(2) * std::size_t(std::max(sm_count, 1));  // m·B < resident + m
  return float_bytes(std::size_t(m) * dim + std::size_t(2) * std::size_t(n) * dim) + partials * sizeof(Candidate) +
         kSlabParts * kSlabAlignment;
}

MultiblockSearch::MultiblockSearch(DeviceFrame& frame, int m, int n, int dim, BlockReduce reduce,
                                   SecondLevel second_level)
    : frame_(frame), m_(m), n_(n), dim_(dim), reduce_(reduce), second_level_(second_level) {
  if (m < 1 || n < 1 || dim < 1) throw std::invalid_argument("MultiblockSearch: m, n and dim must be positive");
  const Occupancy o = occupancy(frame.ordinal(), reduce);
  if (o.per_sm < 1) throw std::runtime_error("multiblock search kernel cannot be resident on this device");
  resident_blocks_ = o.per_sm * o.sms;
  const long long useful = cuda::divup(n, kSearchThreads);  // blocks beyond this would scan nothing
  blocks_per_query_ = int(std::clamp<long long>(cuda::divup(resident_blocks_, m), 1, useful));

  const std::size_t query_bytes = aligned(float_bytes(std::size_t(m) * std::size_t(dim)));
  const std::size_t reference_bytes = aligned(float_bytes(std::size_t(n) * std::size_t(dim)));
  const std::size_t partial_bytes = aligned(std::size_t(m) * std::size_t(blocks_per_query_) * sizeof(Candidate));
  slab_ = frame.alloc_on_stream<unsigned char>(query_bytes + 2 * reference_bytes + partial_bytes);
  if (second_level_ == SecondLevel::host)
    staging_ = frame.staging<Candidate>(std::size_t(m) * std::size_t(blocks_per_query_));
  unsigned char* next = slab_.data();
  const auto carve = [&next](std::size_t bytes) {
    unsigned char* at = next;
    next += bytes;
    return at;
  };
  queries_ = reinterpret_cast<float*>(carve(query_bytes));
  references_ = reinterpret_cast<float*>(carve(reference_bytes));
  soa_ = reinterpret_cast<float*>(carve(reference_bytes));
  partials_ = reinterpret_cast<Candidate*>(carve(partial_bytes));
}

MultiblockSearch::~MultiblockSearch() {
  if (staging_.data()) KNN_CUDA_TRY_NO_THROW(cudaStreamSynchronize(frame_.stream()));
}

void MultiblockSearch::enqueue(const float* host_queries, const float* host_references,
                               const std::function<void()>& after_search) {
  const std::size_t query_floats = std::size_t(m_) * std::size_t(dim_);
  const std::size_t reference_floats = std::size_t(n_) * std::size_t(dim_);
  frame_.timed("h2d", [&] {
    KNN_CUDA_TRY(cudaMemcpyAsync(queries_, host_queries, float_bytes(query_floats), cudaMemcpyHostToDevice,
                                 frame_.stream()));
    KNN_CUDA_TRY(cudaMemcpyAsync(references_, host_references, float_bytes(reference_floats), cudaMemcpyHostToDevice,
                                 frame_.stream()));
  });
  transpose_references(frame_, references_, n_, dim_, soa_);
  const SearchKernel kernel = search_kernel(reduce_);
  // m · B < resident + m blocks, far below the 2^31 - 1 limit of gridDim.x.
  const int search_blocks = m_ * blocks_per_query_;
  frame_.launch("kernel", [&] {
    kernel<<<search_blocks, kSearchThreads, 0, frame_.stream()>>>(dim_, n_, blocks_per_query_, queries_, soa_,
                                                                  partials_);
    if (!after_search) return;
    KNN_CUDA_CHECK_LAUNCH();
    after_search();
  });
}

void MultiblockSearch::finish_on_host(TimingSink& sink, std::int32_t* indices, float* distances) {
  if (second_level_ != SecondLevel::host) throw std::logic_error("finish_on_host: the caller reduces the candidates");
  frame_.timed("d2h", [&] {
    KNN_CUDA_TRY(cudaMemcpyAsync(staging_.data(), partials_, staging_.size() * sizeof(Candidate),
                                 cudaMemcpyDeviceToHost, frame_.stream()));
  });
  frame_.synchronize_and_report(sink);
  const auto start = std::chrono::steady_clock::now();
  for (int q = 0; q < m_; ++q) {
    const Candidate* mine = staging_.data() + std::size_t(q) * std::size_t(blocks_per_query_);
    const Candidate best = merge_candidates(mine[0], 1, blocks_per_query_, 1, [mine](int b) { return mine[b]; });
    store_answer(best, q, indices, distances);
  }
  sink.add("host_reduce", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace knn::gpu
