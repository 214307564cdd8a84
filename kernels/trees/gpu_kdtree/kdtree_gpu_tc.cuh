#pragma once
// v16.tc: a leaf scanned on the tensor cores by a warp of a sorted wave whose 32 queries sit on at most
// v16.tc_leaves leaves (about 256 queries share each leaf at 2^20 × 2^20 in the early waves, a few dozen in
// the late ones) and whose heaps are all full. The scores and the proof are v15's tile filter's
// (kernels/bruteforce/detail/filters/tc_tile_pack.cuh, tc_filter.cuh): the leaf's rows were packed once after
// the build as fp16 B fragments of (r − c)s with their norms (pack_kernel, padding rows never candidates);
// the warp's queries are two m16 tiles of A fragments of −2(q − c)s, each query's heap bound folded into the
// product, so a pair is a candidate exactly when its score is below zero, and every pair whose exact
// distance could enter the heap (ties included) is one. A warp on several leaves scans each in turn; the
// queries on another leaf fold a bound of −inf (no candidate) and drop any bit. Candidates go back to
// their own query's lane by ballots and take v16's exact distance (v0's sums) and heap offer, as the
// scalar scan does, so the answers are the same bit for bit.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/cuda/error.hpp"

#include "kernels/bruteforce/detail/filters/score_bound.cuh"
#include "kernels/bruteforce/detail/filters/tc_tile_pack.cuh"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_walk.cuh"

namespace knn::kd {

// The packed rows and the scores' scale (SearchArgs::tc; rows null: the scalar scan everywhere).
struct TcRows {
  const uint2* rows = nullptr;  // per 8-row group of the tree's rows, 32 lanes' fragments (pack_tc_rows below)
  float center = 0.f, scale = 1.f, band = 0.f;
  int max_leaves = 1;                   // v16.tc_leaves: the most distinct leaves of a warp scanned this way
  unsigned long long* scans = nullptr;  // leaf visits scanned this way (one per query and leaf)
  unsigned long long* warp_scans = nullptr;  // the warps' scans (one per warp and leaf)
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// Called by all 32 lanes of a warp, converged, each with its own query (row `query_row`, registers q) and
// heap `list` (full), and the same `leaf`; the lanes of `members` are those whose query is on it, the others
// take nothing. take(d, tree row) is the scalar scan's offer.
template <int DIM, typename List, typename Take>
__device__ __forceinline__ void tc_scan_leaf(const TreeView& t, const TcRows& tc, const float* query_row, const Query<DIM>& q, int leaf,
                                             unsigned members, const List& list, Take&& take) {
  static_assert(DIM > 0 && DIM <= gpu::kTileFoldDims, "the norm and the bound fold into dimensions 12-15");
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const bool member = (members >> lane) & 1u;
  const float s = tc.scale, s2 = tc.scale * tc.scale;
  // Lane l's query is row (l & 15) of tile l >> 4; the A fragments hold rows g and g + 8 of each tile.
  std::uint32_t frag[2][4];
#pragma unroll
  for (int tile = 0; tile < 2; ++tile)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = 2 * t4 + 8 * (e >> 1);
      const float* row = reinterpret_cast<const float*>(__shfl_sync(kAll, reinterpret_cast<unsigned long long>(query_row), tile * 16 + g + 8 * (e & 1)));
      frag[tile][e] = gpu::tile::pack_half2(gpu::tile::scaled(row, col, DIM, tc.center, -2.f * s), gpu::tile::scaled(row, col + 1, DIM, tc.center, -2.f * s));
      if (t4 == 2 && e >= 2) frag[tile][e] = gpu::tile::pack_half2(1.f, 1.f);  // dimensions 12 and 13: times the norm
    }
  const float norm_low = __fmul_rd(gpu::tc::norm_low(query_row, DIM, tc.center), s2);
  // Each query's heap bound into dimensions 14 and 15 (lane (g, 3), elements 2 and 3: rows g and g + 8); −inf
  // off the leaf (fold clamps it: no candidate).
  const auto refresh = [&] {
    const float worst = member ? list.worst_distance() : -INFINITY;
#pragma unroll
    for (int tile = 0; tile < 2; ++tile)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int from = tile * 16 + g + 8 * h;
        const float bound = __shfl_sync(kAll, worst, from), low = __shfl_sync(kAll, norm_low, from);
        const float folded = gpu::tile::fold(gpu::tc::threshold_for(__fmul_ru(bound, s2), low, tc.band));
        const float hi = __half2float(__float2half_rn(-folded));
        if (t4 == 3) frag[tile][2 + h] = gpu::tile::pack_half2(hi, -folded - hi);
      }
  };
  refresh();
  const int groups = t.leaf_size / 8, mine_tile = lane >> 4, mine_g = lane & 7, mine_h = (lane >> 3) & 1;
  const uint2* rows = tc.rows + std::size_t(leaf) * groups * 32 + lane;
  const float* points = t.points + std::size_t(leaf) * t.leaf_size * DIM;
  uint2 next = rows[0];
  for (int gi = 0; gi < groups; ++gi) {
    const uint2 b = next;
    if (gi + 1 < groups) next = rows[(gi + 1) * 32];
    float d[2][4];
    __syncwarp();  // mma.sync is .aligned: the lanes meet first (after the candidates' divergent offers)
    gpu::tile::mma16(d[0], frag[0], b, make_float4(0.f, 0.f, 0.f, 0.f));
    gpu::tile::mma16(d[1], frag[1], b, make_float4(0.f, 0.f, 0.f, 0.f));
    const std::uint32_t signs = __float_as_uint(d[0][0]) | __float_as_uint(d[0][1]) | __float_as_uint(d[0][2]) | __float_as_uint(d[0][3]) |
                                __float_as_uint(d[1][0]) | __float_as_uint(d[1][1]) | __float_as_uint(d[1][2]) | __float_as_uint(d[1][3]);
    if (!__any_sync(kAll, int(signs) < 0)) continue;
    // Accumulator j of lane (g, t4): query row g + 8 (j >> 1), leaf row 2 t4 + (j & 1). This lane's query's
    // rows 0, 2, 4, 6 and 1, 3, 5, 7 of the group are bits 4 mine_g .. + 3 of two of the ballots.
    unsigned even = 0, odd = 0;
#pragma unroll
    for (int tile = 0; tile < 2; ++tile)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const unsigned votes = __ballot_sync(kAll, __float_as_int(d[tile][j]) < 0);
        if (tile == mine_tile && (j >> 1) == mine_h) ((j & 1) ? odd : even) = votes;
      }
    const unsigned found = member ? (even >> (4 * mine_g)) & 0xfu : 0u, found_odd = member ? (odd >> (4 * mine_g)) & 0xfu : 0u;
    bool taken = false;
    for (unsigned bits = found | (found_odd << 4); bits != 0; bits &= bits - 1) {
      const int bit = __ffs(bits) - 1, r = gi * 8 + 2 * (bit & 3) + (bit >> 2);
      const float dist = row_distance(q, points + std::size_t(r) * DIM, DIM);
      if (dist <= list.worst_distance()) take(dist, leaf * t.leaf_size + r), taken = true;
    }
    if (__any_sync(kAll, taken)) refresh();
  }
  if (lane == __ffs(members) - 1 && tc.scans != nullptr) atomicAdd(tc.scans, (unsigned long long)__popc(members)), atomicAdd(tc.warp_scans, 1ULL);
}
#endif

// Records of the tree's rows packed for tc_scan_leaf: 32 lanes' fragments per 8-row group, in whole stages of
// pack_kernel's (rows past the tree's never candidates).
inline int tc_stages(const TreeView& t) { return gpu::tile_stages((long long)t.leaves * t.leaf_size); }
inline std::size_t tc_row_records(const TreeView& t) { return std::size_t(tc_stages(t)) * gpu::tile::kStageLanes; }
// Packs them (v15's pack_kernel over the tree's rows; padding rows, index -1, never candidates). Host code.
inline void pack_tc_rows(const TreeView& t, float center, float scale, uint2* records, cudaStream_t stream) {
  gpu::tile::TileArgs a{};
  a.references = t.points, a.row_index = t.index, a.dim = t.dim, a.row_begin = 0, a.row_end = t.leaves * t.leaf_size;
  a.center = center, a.scale = scale, a.packed = reinterpret_cast<uint4*>(records), a.stages = tc_stages(t);
  const long long lanes = (long long)tc_row_records(t);
  gpu::tile::pack_kernel<><<<unsigned((lanes + 255) / 256), 256, 0, stream>>>(a);
  KNN_CUDA_CHECK_LAUNCH();
}

}  // namespace knn::kd
