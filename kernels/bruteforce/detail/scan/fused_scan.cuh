#pragma once
// v15's fused distance + top-k scan. One block: kScanBlock threads = QT query threads × RT row
// threads; blockIdx.x = query group × splits + split. One thread: Q queries (query group·QT·Q +
// u·QT + its query thread, u < Q) held in registers, and the row groups split_begin + its row
// thread, + RT, ... of its split of the chunk, 4 rows at a time (dim 16-byte loads, the same
// address across a warp when QT >= 32, so one load serves 32 threads × Q queries). Distances are
// Σ(q − r)² in fp32, first term a product, the others fused multiply-adds. Each query's running
// best sit in registers (a sorted list of K, K <= 32) or in a max-heap in global scratch
// (SharedTopK, topk > 32). A group is offered only when its 4-row minimum beats the worst kept
// distance (almost never late in the scan), so selection costs about one instruction per pair.
// Rows arrive in increasing index order per thread: a distance equal to the worst kept one never
// enters (the kept index is smaller), which is the (distance, index) order of knn::before.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/bruteforce/detail/scan/scan_plan.hpp"
#include "kernels/device/shared_topk.cuh"
#include "kernels/device/warp_reduce.cuh"

namespace knn::gpu::scan {

enum class List { one, eight, thirty_two, heap };

template <List L> __host__ __device__ constexpr int queries_per_thread() { return L == List::one ? 4 : L == List::eight ? 2 : 1; }
static_assert(queries_per_thread<List::one>() == kNearestQueriesPerThread, "scan_plan.hpp plans topk 1 with this many");
template <List L> __host__ __device__ constexpr int capacity() { return L == List::one ? 1 : L == List::eight ? 8 : 32; }

// The list a topk takes, its query slots per thread, and its name in the path.
inline List list_for(int topk) {
  return topk == 1 ? List::one : topk <= 8 ? List::eight : topk <= 32 ? List::thirty_two : List::heap;
}
inline int queries_per_thread(List l) {
  return l == List::one          ? queries_per_thread<List::one>()
         : l == List::eight      ? queries_per_thread<List::eight>()
         : l == List::thirty_two ? queries_per_thread<List::thirty_two>()
                                 : queries_per_thread<List::heap>();
}
inline const char* list_name(List l) {
  return l == List::one          ? "best pair in registers"
         : l == List::eight      ? "sorted lists of 8 in registers"
         : l == List::thirty_two ? "sorted lists of 32 in registers"
                                 : "max-heaps in global scratch";
}

// Everything one chunk's launch needs.
struct Args {
  const float* __restrict__ queries;     // m × dim
  const float* __restrict__ references;  // padded to a multiple of 4 rows
  int dim, m, topk;
  bool self_join;
  int row_begin, row_end;  // the chunk (row_begin a multiple of 4)
  int splits, query_threads, ref_threads;
  long long partials, partial_base;  // a thread's lists go to partial partial_base + split·RT + row thread
  float* partial_distances;          // [(q·partials + p)·topk + s]
  std::int32_t* partial_indices;
  unsigned long long* best;  // List::one: a packed (distance, index) key per query; the filters: topk keys per query
  float* heap_distances;     // List::heap: topk slots per thread, slot-major over the grid
  std::int32_t* heap_indices;
  // The filters (kernels/bruteforce/detail/filters/tc_filter.cuh on tensor cores, fp32_filter.cuh on CUDA
  // cores): centre, score error bound, and a counter of the exact distances computed.
  float tc_center, tc_band;
  unsigned long long* tc_candidates;
  bool tc_shared_lists;  // the tensor-core filter's lists in dynamic shared memory (one split only)
  // The seed (kernels/bruteforce/detail/seed/scan_seed.hpp; register lists only, else nullptr): query slot s
  // scans query query_order[s], and a row enters query q's lists only below query_bound[q].
  const std::int32_t* query_order;
  const float* query_bound;
};

// (distance, index) as one key whose unsigned order is knn::before's (distances >= +0, not NaN;
// index -1 sorts last).
__device__ __forceinline__ unsigned long long pack(float d, std::int32_t i) {
  return (static_cast<unsigned long long>(__float_as_uint(d)) << 32) | static_cast<std::uint32_t>(i);
}

// The least key among the lanes of a warp that share this lane's query slot (lanes ≡ this one mod
// query_threads, a power of two): one atomicMin per warp and query instead of one per lane (with
// one query, 128 lanes of a block met at one address). The lanes of a group share their query, so
// they have all returned or are all here; the mask names just them.
__device__ __forceinline__ unsigned long long warp_min_over_rows(unsigned long long key, int query_threads) {
  return query_threads >= 32 ? key : warp::all_reduce(key, warp::Min{}, warp::group_mask(query_threads), query_threads);
}

// A sorted list of the best K (distance, index) pairs in registers; `worst` is entry topk − 1, or
// the cap (a seed's bound) while that is lower: only distances below the cap ever enter.
template <int K>
struct RegisterList {
  float d[K];
  std::int32_t i[K];
  float worst, cap;
  __device__ __forceinline__ void clear(float bound = INFINITY) {
#pragma unroll
    for (int s = 0; s < K; ++s) d[s] = INFINITY, i[s] = -1;
    worst = cap = bound;
  }
  // Walks the list once, swapping the carried pair with every entry it comes before (the full
  // (distance, index) order, so a displaced pair keeps its place among equal distances): only
  // compile-time indices and selects, so the list stays in registers.
  __device__ __forceinline__ void insert(float dv, std::int32_t iv, int topk) {
#pragma unroll
    for (int s = 0; s < K; ++s) {
      const bool swap = dv < d[s] || (dv == d[s] && iv < i[s]);
      const float td = d[s];
      const std::int32_t ti = i[s];
      d[s] = swap ? dv : td, i[s] = swap ? iv : ti;
      dv = swap ? td : dv, iv = swap ? ti : iv;
    }
    // worst = d[topk - 1] by one select per entry; written in PTX because nvcc otherwise turns the
    // selects back into a run-time index, which moves the whole list to local memory.
    float w = d[0];
#pragma unroll
    for (int s = 1; s < K; ++s)
      asm("{\n\t.reg .pred p;\n\tsetp.eq.s32 p, %1, %2;\n\tselp.f32 %0, %3, %0, p;\n\t}"
          : "+f"(w)
          : "r"(s), "r"(topk - 1), "f"(d[s]));
    worst = fminf(w, cap);
  }
};

// A group's 4 rows of DIM floats (4·DIM consecutive floats) as DIM 16-byte loads.
template <int DIM>
__device__ __forceinline__ void load_group(const float4* __restrict__ p, float4 (&rows)[DIM]) {
#pragma unroll
  for (int c = 0; c < DIM; ++c) rows[c] = __ldg(p + c);
}

// The distances from Q queries to a group's 4 rows (compile-time dim).
template <int DIM, int Q>
__device__ __forceinline__ void group_distances(const float (&query)[Q][DIM], const float4 (&rows)[DIM],
                                                float (&d)[Q][kScanGroup]) {
  float r[kScanGroup * DIM];
#pragma unroll
  for (int c = 0; c < DIM; ++c) r[4 * c] = rows[c].x, r[4 * c + 1] = rows[c].y, r[4 * c + 2] = rows[c].z, r[4 * c + 3] = rows[c].w;
#pragma unroll
  for (int j = 0; j < kScanGroup; ++j)
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      const float diff = query[u][0] - r[j * DIM];
      float s = __fmul_rn(diff, diff);
#pragma unroll
      for (int t = 1; t < DIM; ++t) {
        const float e = query[u][t] - r[j * DIM + t];
        s = __fmaf_rn(e, e, s);
      }
      d[u][j] = s;
    }
}

// The same with dim known at run time (queries read through the cache each dimension).
template <int Q>
__device__ __forceinline__ void group_distances(const float* const (&query)[Q], int dim, const float* __restrict__ rows,
                                                float (&d)[Q][kScanGroup]) {
  for (int t = 0; t < dim; ++t) {
    float r[kScanGroup], q[Q];
#pragma unroll
    for (int j = 0; j < kScanGroup; ++j) r[j] = __ldg(rows + j * dim + t);
#pragma unroll
    for (int u = 0; u < Q; ++u) q[u] = __ldg(query[u] + t);
#pragma unroll
    for (int j = 0; j < kScanGroup; ++j)
#pragma unroll
      for (int u = 0; u < Q; ++u) {
        const float e = q[u] - r[j];
        d[u][j] = t == 0 ? __fmul_rn(e, e) : __fmaf_rn(e, e, d[u][j]);
      }
  }
}

// One resident block asked for: nvcc then takes the registers it wants (up to 167 here) instead of
// keeping 128; on an H100 no measured shape got more than 2 % slower, and case 1628 (heaps of
// 128 at k 16) 2.3x (docs/v15.md, results/h100/v15/seed/launch-bounds-1/).
template <int DIM, List L>
__global__ void __launch_bounds__(kScanBlock, 1) scan_kernel(Args a) {
  constexpr int Q = queries_per_thread<L>();
  constexpr int K = capacity<L>();
  const int qt = threadIdx.x % a.query_threads, rt = threadIdx.x / a.query_threads;
  const int group = blockIdx.x / a.splits, split = blockIdx.x % a.splits;
  int q[Q];  // query slots first, then the queries they scan
#pragma unroll
  for (int u = 0; u < Q; ++u) q[u] = (group * Q + u) * a.query_threads + qt;
  if (q[0] >= a.m) return;  // q[u] grows with u: this thread has no query at all
  bool active[Q];
#pragma unroll
  for (int u = 0; u < Q; ++u) {
    active[u] = q[u] < a.m, q[u] = active[u] ? q[u] : a.m - 1;
    if (a.query_order != nullptr) q[u] = a.query_order[q[u]];
  }

  float query[Q][DIM > 0 ? DIM : 1];
  const float* query_row[Q];
#pragma unroll
  for (int u = 0; u < Q; ++u) {
    query_row[u] = a.queries + std::size_t(q[u]) * a.dim;
    if constexpr (DIM > 0)
#pragma unroll
      for (int t = 0; t < DIM; ++t) query[u][t] = __ldg(query_row[u] + t);
  }

  RegisterList<K> list[L == List::heap ? 1 : Q];
  SharedTopK heap;
  const long long thread_slot = (long long)blockIdx.x * kScanBlock + threadIdx.x;
  if constexpr (L == List::heap) {
    const long long stride = (long long)gridDim.x * kScanBlock;
    heap = SharedTopK(a.heap_distances + thread_slot, a.heap_indices + thread_slot, int(stride), a.topk);
    heap.clear();
  } else {
#pragma unroll
    for (int u = 0; u < Q; ++u) list[u].clear(a.query_bound != nullptr ? a.query_bound[q[u]] : INFINITY);
  }

  // Offers a group's distances to the lists (row0: the group's first row).
  const auto offer = [&](const float (&d)[Q][kScanGroup], int row0) {
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      const float low = fminf(fminf(d[u][0], d[u][1]), fminf(d[u][2], d[u][3]));
      const float worst = L == List::heap ? heap.worst_distance() : list[u].worst;
      if (!(low < worst)) continue;
      // Rare: some row enters. The query itself (self-join) is passed over here only, since a
      // group that beats nothing needs no check.
#pragma unroll
      for (int j = 0; j < kScanGroup; ++j) {
        const int row = row0 + j;
        if (a.self_join && row == q[u]) continue;
        if constexpr (L == List::heap) {
          heap.offer_ascending(d[u][j], row);
        } else if (d[u][j] < list[u].worst) {
          list[u].insert(d[u][j], row, a.topk);
        }
      }
    }
  };
  const int groups = (a.row_end - a.row_begin + kScanGroup - 1) / kScanGroup;
  const int full = (a.row_end - a.row_begin) / kScanGroup;  // the groups without padding rows
  const int g_end = int((long long)groups * (split + 1) / a.splits);
  int g = int((long long)groups * split / a.splits) + rt;
  if constexpr (DIM > 0) {
    // The full groups, with a pointer stepped from group to group. Seeded register lists at k <= 4
    // load each group's successor while its distances are computed (the last one loads its own
    // rows again): few loads per group leave a warp waiting on them otherwise. Without a seed the
    // insertions dominate, and the loop's two copies of them made an H100's case 200 1.6x slower.
    constexpr bool ahead = DIM <= 4 && (L == List::eight || L == List::thirty_two);
    const int g_full = min(g_end, full);
    const int step = a.ref_threads * DIM;  // float4s from one of this thread's groups to its next
    const float4* p = reinterpret_cast<const float4*>(a.references) + std::size_t(a.row_begin / kScanGroup + g) * DIM;
    if (ahead && a.query_bound != nullptr) {  // two buffers in turn, so that no copy waits for a load
      float4 r0[DIM], r1[DIM];
      if (g < g_full) load_group<DIM>(p, r0);
      while (g < g_full) {
        float d[Q][kScanGroup];
        const bool more = g + a.ref_threads < g_full;
        load_group<DIM>(more ? p + step : p, r1);
        group_distances<DIM, Q>(query, r0, d);
        offer(d, a.row_begin + g * kScanGroup);
        g += a.ref_threads, p += step;
        if (!more) break;
        load_group<DIM>(g + a.ref_threads < g_full ? p + step : p, r0);
        group_distances<DIM, Q>(query, r1, d);
        offer(d, a.row_begin + g * kScanGroup);
        g += a.ref_threads, p += step;
      }
    } else {
      for (; g < g_full; g += a.ref_threads, p += step) {
        float4 rows[DIM];
        load_group<DIM>(p, rows);
        float d[Q][kScanGroup];
        group_distances<DIM, Q>(query, rows, d);
        offer(d, a.row_begin + g * kScanGroup);
      }
    }
  }
  // Run-time dim: every group; compiled dim: the chunk's last group when padding rows end it.
  for (; g < g_end; g += a.ref_threads) {
    const int row0 = a.row_begin + g * kScanGroup;
    float d[Q][kScanGroup];
    const float* rows = a.references + std::size_t(row0) * a.dim;
    if constexpr (DIM > 0) {
      float4 r[DIM];
      load_group<DIM>(reinterpret_cast<const float4*>(rows), r);
      group_distances<DIM, Q>(query, r, d);
    } else {
      group_distances<Q>(query_row, a.dim, rows, d);
    }
    const int valid = a.row_end - row0;  // rows past the chunk (padding) are no candidates
#pragma unroll
    for (int j = 0; j < kScanGroup; ++j)
#pragma unroll
      for (int u = 0; u < Q; ++u) d[u][j] = j < valid ? d[u][j] : INFINITY;
    offer(d, row0);
  }

  const long long partial = a.partial_base + (long long)split * a.ref_threads + rt;
  if constexpr (L == List::one) {
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      const unsigned long long best = warp_min_over_rows(pack(list[u].d[0], list[u].i[0]), a.query_threads);
      if (active[u] && (threadIdx.x & 31) < a.query_threads) atomicMin(a.best + q[u], best);
    }
  } else if constexpr (L == List::heap) {
    const std::size_t at = (std::size_t(q[0]) * a.partials + partial) * a.topk;
    heap.store(a.partial_indices + at, a.partial_distances + at);
  } else {
#pragma unroll
    for (int u = 0; u < Q; ++u) {
      if (!active[u]) continue;
      const std::size_t at = (std::size_t(q[u]) * a.partials + partial) * a.topk;
#pragma unroll
      for (int s = 0; s < K; ++s)
        if (s < a.topk) a.partial_distances[at + s] = list[u].d[s], a.partial_indices[at + s] = list[u].i[s];
    }
  }
}

// The dimensions the scan compiles in (the others take the run-time loop).
inline bool compiled_dim(int dim) { return dim == 1 || dim == 2 || dim == 3 || dim == 4 || dim == 5 || dim == 8 || dim == 16; }

// (Templates, so that only a file that calls them compiles every scan kernel.)
template <List L>
auto pick_dim(int dim) {
  switch (dim) {
    case 1: return scan_kernel<1, L>;
    case 2: return scan_kernel<2, L>;
    case 3: return scan_kernel<3, L>;
    case 4: return scan_kernel<4, L>;
    case 5: return scan_kernel<5, L>;
    case 8: return scan_kernel<8, L>;
    case 16: return scan_kernel<16, L>;
    default: return scan_kernel<0, L>;
  }
}

// The scan kernel for k dimensions and list l.
template <int Unused = 0>
auto pick_kernel(int dim, List l) {
  return l == List::one          ? pick_dim<List::one>(dim)
         : l == List::eight      ? pick_dim<List::eight>(dim)
         : l == List::thirty_two ? pick_dim<List::thirty_two>(dim)
                                 : pick_dim<List::heap>(dim);
}

}  // namespace knn::gpu::scan
