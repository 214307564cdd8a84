// SeedCollect: the collecting kernel (exact distances against each query's bound, the rows below
// it appended to the query's buffer) and the selection of each query's topk from its buffers
// (kernels/bruteforce/detail/seed/seed_collect.hpp says why).
#include "kernels/bruteforce/detail/seed/seed_collect_device.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "core/cuda/device.hpp"
#include "core/cuda/error.hpp"
#include "kernels/bruteforce/detail/scan/fused_scan.cuh"
#include "kernels/bruteforce/detail/filters/score_bound.cuh"
#include "kernels/bruteforce/detail/seed/seed_collect_kernels.cuh"
#include "kernels/device/warp_reduce.cuh"

namespace knn::gpu {
namespace {

using collect::Args;
using collect::cut;
using collect::gate_open;

// A block stages this many float4s of rows in shared memory at a time (16 KiB): every tile costs
// two barriers and a global load's latency.
constexpr int kTileFloat4 = 1024;
constexpr int kSelectBlock = 128;

// One thread: Q query slots (slot = (group · Q + u) · block + thread, so a warp's lanes hold
// neighbours in Morton order), the rows of its block's split staged in shared memory, 4 at a time.
// SCORE: the tile holds each group's rows less the centre c and their norms ‖r − c‖², a pair costs
// k fused multiply-adds and a comparison with the query's threshold, and the rare groups where
// some score passes get exact distances; otherwise every pair's exact distance meets the bound.
// nvcc's own register budget. Tried on an H100's case 405 (k 5, Q 4; results/h100/v15/collect/):
// one flag for a group's 16 pairs instead of one per query, with a cap of 96 registers, 376 ms;
// with one resident block asked for (135 registers, 3 blocks per SM) 397, and 8 queries per thread
// 411, against 345-349 here.
template <int DIM, int Q, bool SCORE>
__device__ __noinline__ void collect_piece(const Args& a, int group, int split, int g_begin, int g_end) {
  constexpr int kPer = DIM + (SCORE ? 1 : 0);  // float4s per row group in the tile
  constexpr int kTile = kTileFloat4 / kPer;    // row groups per tile
  __shared__ float4 tile[kTile * kPer];
  // What only the rare path reads stays in shared memory, so that the registers hold what every
  // pair reads: the queries and each one's limit (the threshold with scores, else the bound). In
  // registers (results/h100/v15/collect/tried-registers/) case 405 took 342 ms against 345-349,
  // but seed shape 2001 29.7 ms against 13.5 (same Q and splits).
  __shared__ int s_query[Q][kCollectBlock], s_count[Q][kCollectBlock];
  __shared__ float s_bound[Q][kCollectBlock], s_norm[Q][kCollectBlock];
  const int me = threadIdx.x;
  const auto slot = [&](int u) { return (group * Q + u) * kCollectBlock + me; };
  float query[Q][DIM], limit[Q];
#pragma unroll
  for (int u = 0; u < Q; ++u) {
    const bool active = slot(u) < a.m;
    const int q = a.order[active ? slot(u) : a.m - 1];
    const float* row = a.queries + std::size_t(q) * DIM;
#pragma unroll
    for (int t = 0; t < DIM; ++t) query[u][t] = SCORE ? -2.f * (__ldg(row + t) - a.center) : __ldg(row + t);
    const float bound = active ? a.bound[q] : -INFINITY;  // an idle slot admits nothing
    const float norm = SCORE ? tc::norm_low(row, DIM, a.center) : 0.f;
    limit[u] = !SCORE ? bound : active ? tc::threshold_for(bound, norm, a.band) : -INFINITY;
    s_query[u][me] = q, s_count[u][me] = 0, s_bound[u][me] = bound, s_norm[u][me] = norm;
  }
  unsigned long long appended = 0, cuts = 0;
  const int groups = (a.n + kScanGroup - 1) / kScanGroup;
  for (int t0 = g_begin; t0 < g_end; t0 += kTile) {  // every thread of the block reaches the barriers
    const int tg = min(kTile, g_end - t0);
    __syncthreads();
    if constexpr (SCORE) {
#pragma unroll 2
      for (int i = threadIdx.x; i < tg; i += kCollectBlock) {
        float4 r[DIM];
        scan::load_group<DIM>(a.references + std::size_t(t0 + i) * DIM, r);
        float x[kScanGroup * DIM], norm[kScanGroup];
#pragma unroll
        for (int c = 0; c < DIM; ++c)
          x[4 * c] = r[c].x - a.center, x[4 * c + 1] = r[c].y - a.center, x[4 * c + 2] = r[c].z - a.center,
                    x[4 * c + 3] = r[c].w - a.center;
#pragma unroll
        for (int j = 0; j < kScanGroup; ++j) {
          norm[j] = __fmul_rn(x[j * DIM], x[j * DIM]);
#pragma unroll
          for (int t = 1; t < DIM; ++t) norm[j] = __fmaf_rn(x[j * DIM + t], x[j * DIM + t], norm[j]);
          norm[j] = t0 + i < groups - 1 || (t0 + i) * kScanGroup + j < a.n ? norm[j] : INFINITY;  // padding rows
        }
#pragma unroll
        for (int c = 0; c < DIM; ++c) tile[i * kPer + c] = make_float4(x[4 * c], x[4 * c + 1], x[4 * c + 2], x[4 * c + 3]);
        tile[i * kPer + DIM] = make_float4(norm[0], norm[1], norm[2], norm[3]);
      }
    } else {
      for (int i = threadIdx.x; i < tg * DIM; i += kCollectBlock) tile[i] = __ldg(a.references + std::size_t(t0) * DIM + i);
    }
    __syncthreads();
#pragma unroll 2
    for (int t = 0; t < tg; ++t) {
      float4 rows[DIM];
#pragma unroll
      for (int c = 0; c < DIM; ++c) rows[c] = tile[t * kPer + c];
      float d[Q][kScanGroup];
      unsigned flagged = 0;  // SCORE: the queries with a passing score
      if constexpr (SCORE) {
        const float4 n4 = tile[t * kPer + DIM];
        const float norm[kScanGroup] = {n4.x, n4.y, n4.z, n4.w};
        float x[kScanGroup][DIM];  // the group's 4 · DIM floats, row after row
        float* flat = &x[0][0];
#pragma unroll
        for (int c = 0; c < DIM; ++c) flat[4 * c] = rows[c].x, flat[4 * c + 1] = rows[c].y, flat[4 * c + 2] = rows[c].z, flat[4 * c + 3] = rows[c].w;
        flagged = tc::flag_scores(query, x, norm, limit);
        if (flagged == 0) continue;
      } else {
        scan::group_distances<DIM, Q>(query, rows, d);
        bool hit = false;
#pragma unroll
        for (int u = 0; u < Q; ++u)
#pragma unroll
          for (int j = 0; j < kScanGroup; ++j) hit |= d[u][j] < limit[u];
        if (!hit) continue;
      }
      const int row0 = (t0 + t) * kScanGroup;
#pragma unroll
      for (int u = 0; u < Q; ++u) {
        if (SCORE && !(flagged & (1u << u))) continue;
        const int q = s_query[u][me];
        float bound = s_bound[u][me];
        int count = s_count[u][me];
        unsigned long long* buffer = a.keys + (std::size_t(slot(u)) * a.splits + split) * a.capacity;
#pragma unroll
        for (int j = 0; j < kScanGroup; ++j) {
          const int row = row0 + j;  // padding rows (row >= n) and the query itself are no candidates
          if (row >= a.n || (a.self_join && row == q)) continue;
          const float e = SCORE ? tc::exact_distance<DIM>(a.queries + std::size_t(q) * DIM, a.rows + std::size_t(row) * DIM)
                                : d[u][j];
          if (!(e < bound)) continue;
          buffer[count] = scan::pack(e, row);
          ++appended;
          if (++count == a.capacity) {
            bound = fminf(bound, cut(buffer, a.capacity, a.topk));
            limit[u] = SCORE ? tc::threshold_for(bound, s_norm[u][me], a.band) : bound;
            count = a.topk, ++cuts;
          }
        }
        s_bound[u][me] = bound, s_count[u][me] = count;
      }
    }
  }
#pragma unroll
  for (int u = 0; u < Q; ++u)
    if (slot(u) < a.m) a.counts[std::size_t(slot(u)) * a.splits + split] = s_count[u][me];
  appended = knn::gpu::warp::sum(appended), cuts = knn::gpu::warp::sum(cuts);
  if (threadIdx.x % 32 == 0 && appended > 0) atomicAdd(a.stats, appended);
  if (threadIdx.x % 32 == 0 && cuts > 0) atomicAdd(a.stats + 1, cuts);
}

// The block's units (kernels/bruteforce/detail/seed/seed_collect.hpp: collect_begin): query groups g_lo ..
// g_hi, from row group r_lo of the first to r_hi of the last, a group's piece at a time. The block is
// the first to scan any group after its first (piece 0). The piece is a call, not inlined: inlined
// in this loop, nvcc kept case 405's kernel (k 5, Q 4) at 56 registers with the queries and limits
// in local memory, and it took 1.3 s against 0.35.
template <int DIM, int Q, bool SCORE>
__global__ void __launch_bounds__(kCollectBlock) collect_kernel(const __grid_constant__ Args a) {
  if (!gate_open(a)) return;  // the whole grid: the tensor cores' kernel runs instead
  const long long rg = (a.n + kScanGroup - 1) / kScanGroup;
  const CollectRange r = collect_range(blockIdx.x, rg, a.query_groups, a.grid, a.splits, a.balanced);
  if (r.lo >= r.hi) return;
  const int g_lo = int(r.lo / rg), r_lo = int(r.lo % rg), g_hi = int((r.hi - 1) / rg), r_hi = int((r.hi - 1) % rg) + 1;
  for (int group = g_lo; group <= g_hi; ++group)  // block-uniform: every thread reaches the barriers
    collect_piece<DIM, Q, SCORE>(a, group, group == g_lo ? r.piece : 0, group == g_lo ? r_lo : 0, group == g_hi ? r_hi : int(rg));
}

// The gate's counts: the queries whose bound is below level l's (collect_tc_gate_bound).
struct GateBounds {
  float below[kCollectTcGateLevels];
};
__global__ void gate_kernel(const float* __restrict__ bound, int m, GateBounds g, unsigned long long* counts) {
  unsigned long long below[kCollectTcGateLevels] = {};
  for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < m; q += (long long)gridDim.x * blockDim.x)
#pragma unroll
    for (int l = 0; l < kCollectTcGateLevels; ++l) below[l] += bound[q] < g.below[l] ? 1 : 0;
#pragma unroll
  for (int l = 0; l < kCollectTcGateLevels; ++l) {
    const unsigned long long sum = knn::gpu::warp::sum(below[l]);
    if (threadIdx.x % 32 == 0 && sum > 0) atomicAdd(counts + l, sum);
  }
}

// One warp per query slot: topk rounds of a warp-wide minimum over the slot's buffers, each round
// above the last key taken (keys are distinct: one per row).
__global__ void select_kernel(Args cuda_cores, Args tensor, std::int32_t* __restrict__ indices, float* __restrict__ distances) {
  const Args& a = tensor.gate != nullptr && gate_open(tensor) ? tensor : cuda_cores;  // the kernel that ran
  const long long s = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (s >= a.m) return;  // the whole warp
  const std::size_t q = std::size_t(a.order[s]);
  const unsigned long long* keys = a.keys + std::size_t(s) * a.splits * a.capacity;
  const int* counts = a.counts + std::size_t(s) * a.splits;
  unsigned long long low = 0;
  for (int r = 0; r < a.topk; ++r) {
    unsigned long long best = ~0ull;
    for (int p = 0; p < a.splits; ++p) {
      const int c = counts[p];
      for (int e = lane; e < c; e += 32) {
        const unsigned long long x = keys[std::size_t(p) * a.capacity + e];
        best = x >= low && x < best ? x : best;
      }
    }
    best = knn::gpu::warp::min(best);
    if (best == ~0ull) {  // fewer candidates than topk: v0's empty slots
      for (int t = r + lane; t < a.topk; t += 32) distances[q * a.topk + t] = INFINITY, indices[q * a.topk + t] = -1;
      return;
    }
    if (lane == 0)
      distances[q * a.topk + r] = __uint_as_float(unsigned(best >> 32)), indices[q * a.topk + r] = std::int32_t(best & 0xffffffffu);
    low = best + 1;
  }
}

using Kernel = void (*)(Args);

template <int Q, bool SCORE>
Kernel pick_dim(int dim) {
  switch (dim) {
    case 1: return collect_kernel<1, Q, SCORE>;
    case 2: return collect_kernel<2, Q, SCORE>;
    case 3: return collect_kernel<3, Q, SCORE>;
    case 4: return collect_kernel<4, Q, SCORE>;
    case 5: return collect_kernel<5, Q, SCORE>;
    default: return nullptr;
  }
}
static_assert(kCollectMaxDim == 5, "pick_dim compiles k = 1 .. kCollectMaxDim");

template <bool SCORE>
Kernel pick_q(int dim, int queries_per_thread) {
  return queries_per_thread == 4   ? pick_dim<4, SCORE>(dim)
         : queries_per_thread == 2 ? pick_dim<2, SCORE>(dim)
                                   : pick_dim<1, SCORE>(dim);
}

Kernel pick(int dim, int queries_per_thread, bool scores) {
  return scores ? pick_q<true>(dim, queries_per_thread) : pick_q<false>(dim, queries_per_thread);
}

// The plan re-balanced for the blocks of the chosen kernel that an SM holds at once.
CollectPlan with_occupancy(CollectPlan plan, int m, int n, int dim, int sm_count) {
  if (plan.tensor) return plan;  // plan_collect_tensor's own geometry
  const Kernel k = pick(dim, plan.queries_per_thread, plan.scores);
  if (k == nullptr) throw std::logic_error(fmt::format("SeedCollect: no kernel for k = {}", dim));
  int per_sm = 0;
  KNN_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kCollectBlock, 0));
  balance_collect(plan, m, n, (long long)std::max(1, sm_count) * std::max(1, per_sm), plan.balance);
  return plan;
}

// The tensor cores' plan the gate may choose instead of the CUDA cores' `plan` (none without a
// tc_band, or where its buffers would not fit).
std::optional<CollectPlan> tensor_alternative(const CollectPlan& plan, int m, int n, int topk, int sm_count) {
  if (plan.tensor || !(plan.tc_band > 0.f)) return std::nullopt;
  CollectPlan t = plan;
  if (!plan_collect_tensor(t, m, n, topk, sm_count, plan.tensor_split)) return std::nullopt;
  t.band = plan.tc_band;
  return t;
}

std::size_t key_count(const CollectPlan& c, const std::optional<CollectPlan>& t, int m) {
  return std::size_t(m) * std::max<std::size_t>(std::size_t(c.splits) * c.capacity, t ? std::size_t(t->splits) * t->capacity : 0);
}

std::size_t count_count(const CollectPlan& c, const std::optional<CollectPlan>& t, int m) {
  return std::size_t(m) * std::max(c.splits, t ? t->splits : 0);
}

}  // namespace

SeedCollect::SeedCollect(const CollectPlan& plan, int m, int n, int dim, int topk, int sm_count, cudaStream_t stream)
    : plan_(with_occupancy(plan, m, n, dim, sm_count)), tensor_(tensor_alternative(plan_, m, n, topk, sm_count)), m_(m),
      topk_(topk), keys_(key_count(plan_, tensor_, m), stream), stats_(kStats, stream),
      counts_(count_count(plan_, tensor_, m), stream) {}

bool SeedCollect::tensor_ran() const {
  return plan_.tensor || (tensor_ && host_counts_[2 + kCollectTcGateLevel] <= gate_max());
}

unsigned long long SeedCollect::gate_max() const { return (unsigned long long)(kCollectTcGateShare * m_); }

void SeedCollect::enqueue(const float* queries, const float* references, int dim, int n, bool self_join,
                          const std::int32_t* order, const float* bound, std::int32_t* indices, float* distances,
                          cudaStream_t stream) {
  const auto args = [&](const CollectPlan& c, bool gated) {
    return Args{queries, reinterpret_cast<const float4*>(references), references, m_, n, dim, topk_, c.splits,
                c.capacity, c.query_groups, c.grid, c.balanced, self_join, c.center, c.band,
                c.splits / kCollectTcLanes, order, bound, keys_.data(), counts_.data(), stats_.data(),
                gated ? stats_.data() + 2 + kCollectTcGateLevel : nullptr, gate_max(), c.tensor};
  };
  const Args a = args(plan_, tensor_.has_value());
  const Args t = tensor_ ? args(*tensor_, true) : Args{};
  KNN_CUDA_TRY(cudaMemsetAsync(stats_.data(), 0, kStats * sizeof(unsigned long long), stream));
  // A balanced grid, or the kernel the gate stops, need not reach every (query, split): those stay empty.
  KNN_CUDA_TRY(cudaMemsetAsync(counts_.data(), 0, counts_.size() * sizeof(int), stream));
  if (tensor_) {  // the gate's counts, then both kernels: one returns at once
    GateBounds g;
    for (int l = 0; l < kCollectTcGateLevels; ++l) g.below[l] = collect_tc_gate_bound(tensor_->band, dim, l);
    gate_kernel<<<int(std::min<long long>(1024, (m_ + 255LL) / 256)), 256, 0, stream>>>(bound, m_, g, stats_.data() + 2);
    KNN_CUDA_CHECK_LAUNCH();
    collect::launch_collect_tc(t, tensor_->grid, tensor_->tensor_split, stream);
  }
  if (plan_.tensor) {
    collect::launch_collect_tc(a, plan_.grid, plan_.tensor_split, stream);
  } else {
    const Kernel k = pick(dim, plan_.queries_per_thread, plan_.scores);
    if (k == nullptr) throw std::logic_error(fmt::format("SeedCollect: no kernel for k = {}", dim));
    k<<<int(plan_.blocks()), kCollectBlock, 0, stream>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
  }
  select_kernel<<<cuda::divup((long long)m_ * 32, kSelectBlock), kSelectBlock, 0, stream>>>(a, t, indices, distances);
  KNN_CUDA_CHECK_LAUNCH();
}

void SeedCollect::download_counts(cudaStream_t stream) {
  KNN_CUDA_TRY(cudaMemcpyAsync(host_counts_, stats_.data(), sizeof host_counts_, cudaMemcpyDeviceToHost, stream));
}

std::string SeedCollect::path(int dim) const {
  const unsigned long long* n = host_counts_;
  const CollectPlan& c = tensor_ran() && tensor_ ? *tensor_ : plan_;
  const std::string scores =
      c.tensor ? fmt::format("TF32 tensor-core scores (mma.sync m16n8k8{})", c.tensor_split ? ", hi + lo: three products" : "")
      : c.scores ? std::string("fp32 scores")
                 : std::string();
  const std::string layout =
      c.tensor ? fmt::format("64 queries per warp, blocks of {} queries, {} blocks, {} split{} of the rows per group",
                             kCollectTcQueries, c.grid, c.splits / kCollectTcLanes, c.splits == kCollectTcLanes ? "" : "s")
               : fmt::format("{} quer{} per thread, blocks of {}, {} query group{}, {} block{} {}", c.queries_per_thread,
                             c.queries_per_thread == 1 ? "y" : "ies", kCollectBlock, c.query_groups,
                             c.query_groups == 1 ? "" : "s", c.grid, c.grid == 1 ? "" : "s",
                             c.balanced ? fmt::format("sharing the rows of all groups equally (at most {} per group)", c.splits)
                                        : fmt::format("of whole groups, {} split{} of the rows per group", c.splits,
                                                      c.splits == 1 ? "" : "s"));
  const std::string gate =
      !tensor_ ? std::string()
               : fmt::format("; tensor cores {}: {} of {} queries with a bound below {:.3g} (rows passing the TF32 band "
                             "{:.3g} more than {} x those within the bound; at most {}; above 16, 64, 256, 1024, 4096 x: "
                             "{}, {}, {}, {}, {})",
                             tensor_ran() ? "chosen" : "not chosen", n[2 + kCollectTcGateLevel], m_,
                             collect_tc_gate_bound(tensor_->band, dim, kCollectTcGateLevel), tensor_->band,
                             1 << (2 * kCollectTcGateLevel + 4), gate_max(), n[2], n[3], n[4], n[5], n[6]);
  return fmt::format(
      "k={} compiled in, candidate buffers: {}, those below it appended to a buffer of {} keys per query{} and split ({} in "
      "all, {:.1f} per query; {} buffer{} cut back to topk), then each query's {} smallest taken by a warp; {}, 1 chunk "
      "(copy on one stream, search on another){}",
      dim,
      scores.empty() ? std::string("every row's exact distance compared with the query's bound")
                     : fmt::format("{} ||r-c||^2 - 2(q-c).(r-c) with c = {:g} against each query's threshold (error bound "
                                   "{:.3g}), the exact distance where one passes, compared with the query's bound",
                                   scores, c.center, c.band),
      c.capacity, c.tensor ? ", lane" : "", n[0], double(n[0]) / m_, n[1], n[1] == 1 ? "" : "s", topk_, layout, gate);
}

std::size_t SeedCollect::device_bytes(const CollectPlan& plan, int m, int n) {
  // The keys: the larger of the two plans', each within the budget. The tensor cores' plan takes
  // 4 lanes' buffers of half the capacity, max(16, 2 topk), per split of the rows (at most one
  // per kCollectMinRowsPerSplit rows), and as many counts.
  const int splits = collect_max_splits(plan, m, n);
  const long long tc_splits = kCollectTcLanes * std::max(1LL, (long long)n / kCollectMinRowsPerSplit);
  const std::size_t keys = std::size_t(m) * std::max<std::size_t>(std::size_t(splits) * plan.capacity,
                                                                  std::size_t(tc_splits) * (plan.capacity / 2));
  return std::min(keys * sizeof(unsigned long long), kCollectBudget) +
         std::size_t(m) * std::max<long long>(splits, tc_splits) * sizeof(int) + kStats * sizeof(unsigned long long);
}

}  // namespace knn::gpu
