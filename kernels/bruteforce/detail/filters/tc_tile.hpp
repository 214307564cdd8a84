#pragma once
// v15's tile filter: the tensor-core filter's score and proof (tc_filter.cuh) for 1024 queries and more, with
// the per-pair work cut to what the tensor cores cannot do. A warp holds 128 queries as fp16 A
// fragments of −2(q − c)·s (s a power of two that brings the centred values within [−1, 1]); every
// chunk of references is first written once as ready B fragments (fp16 (r − c)·s, 16 dimensions) with
// their fp32 norms ‖(r − c)·s‖², and a block of 512 queries streams them through shared memory by
// asynchronous copies. One mma.sync.m16n8k16 per 16 queries × 8 rows (fp32 accumulators started
// from 0) gives the scaled score s²·S less the query's threshold (for k ≤ 12 the norm and the threshold
// are the product's last four dimensions; for k 13..16 the accumulators start from the norm less the
// threshold), so a pair costs only its sign, ORed with the others', and the warp one vote per 1024
// pairs. Candidates get the fused scan's exact fp32
// distance and enter the query's topk keys in shared memory (tc::offer), and with row splits the query's
// keys in global memory as well (below), so the answers are the scan's, bit for bit. The plan and the bound are host code, tested on the CPU.
#include <cstddef>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"

namespace knn::gpu {

inline constexpr int kTileDims = 16;       // one m16n8k16 product: k ≤ 16
inline constexpr int kTileTiles = 8;       // 16-query tiles per warp
inline constexpr int kTileWarps = 4;
inline constexpr int kTileBlock = 32 * kTileWarps;
inline constexpr int kTileBlockQueries = 16 * kTileTiles * kTileWarps;  // 512
inline constexpr int kTileStageGroups = 16;                             // 8-row groups per stage (128 rows)
inline constexpr int kTileMaxTopk = 16;                                 // the block's lists in shared memory
// The automatic rule (v15.tc_tile=auto): k ≥ 5, m ≥ 1024 and n ≥ 2^17 (2^16 at topk 1). The seeds'
// 2^20 × 2^20 top-5 cases took 122-196 ms on an H200 against 243-599 ms by v15's other paths (docs/v15.md,
// "The tile filter"). Below 2^19 queries the rows are split among blocks (below), and against 2^20 rows
// k 5..16 took 0.20-0.63 of the time of the TF32 filter's lists (top-5) from 1024 queries, and of the fp32 or
// TF32 filter (top-1) from 2048; top-1 at 1024 queries tied, 0.94-0.99, cases 7 (2^16 rows) and 11 among
// them (H200, configs/studies/v15-tile-few.json; docs/v15.md, "Row splits for the nearest neighbour"). At
// k 3 it lost (case 10: 1.11, case 6: 1.24). Top-k lists were measured at 2^20 rows only.
inline constexpr int kTileMinDim = 5;
inline constexpr int kTileMinQueries = 1024;
inline constexpr int kTileMinRows = 1 << 17;
inline constexpr int kTileNearestMinRows = 1 << 16;
// Row splits (each split's keys merged into the queries' keys in global memory: atomicMin at topk 1,
// tc::offer's cascades above): with few queries the blocks along the queries leave SMs idle, so each
// chunk's rows are shared out among
// `splits` blocks per query block, enough to fill the device once, none with fewer than
// kTileMinSplitStages stages of 128 rows. The kernel's launch bounds: kTileFoldBlocksPerSm blocks an SM
// where the norm is folded into the product (k <= kTileFoldDims), kTileBlocksPerSm above.
inline constexpr int kTileMinSplitStages = 4;
// k up to which the product carries the norm (dimensions 12, 13: A 1 and 1, B the norm as fp16 hi + lo)
// and the threshold (14, 15); above, the accumulators start from the norms less the thresholds.
inline constexpr int kTileFoldDims = kTileDims - 4;
inline constexpr int kTileFoldBlocksPerSm = 6, kTileBlocksPerSm = 4;
inline constexpr int kTileMaxSplits = 4096;
// v15.tile_waves=0: the splits fill the device twice over from this many blocks of queries (while they alone
// leave SMs idle), once below. On an H200 (interleaved, tile_waves 1 against 2) twice over took 2-18 % less
// at 16384 and 65536 queries against 2^20 rows (k 5-16, topk 1-16; docs/v15.md), and at 4096 queries once
// over was the faster (a sweep of 1-6 in one process).
inline constexpr int kTileTwoWaveBlocks = 32;

// Stages of a chunk of `rows` rows: its 8-row groups, kTileStageGroups a stage, the last padded.
inline constexpr int tile_stages(long long rows) { return int(((rows + 7) / 8 + kTileStageGroups - 1) / kTileStageGroups); }

struct TilePlan {
  bool chosen = false;
  std::string why;        // when not chosen: the reason
  float center = 0.f;     // c
  float half_span = 0.f;  // H ≥ |x − c| for every value x (rounded up)
  float scale = 1.f;      // s = 2^e with H·s in [1/2, 1)
  float band = 0.f;       // E_s ≥ |computed − true scaled score| (rounded up), in scaled units
  int blocks = 0;         // ceil(m / 512)
  std::vector<int> chunk_splits;  // per chunk: blocks along its rows per block of queries
  std::vector<int> chunk_rows;
  bool ramp = false;  // the first chunks grow (few queries, v15.ramp)
  int waves = 1;      // the device filled this many times over by the rule's splits (v15.tile_waves)
  int chunks() const { return int(chunk_rows.size()) - 1; }
};

// The bound E_s on |computed − true s²·S| for k ≤ 16 dimensions whose scaled centred values lie in
// [−h, h] (h = H·s < 1): W = k·h²; fp16 rounding of both factors (2^-11 each) and the fp32 centring
// 1.01·2^-9·W; the tensor core's fp32 sums modelled as in tc_score_error_bound, 2^-20 of the summed
// magnitudes per term (17 terms), the magnitudes at most 8.1·W here because the query's threshold (at
// most the largest distance 4W plus ‖q − c‖²·s² ≤ W) is summed with the norm (W) and the products
// (2W); the fp32 norm (k + 3)·2^-23·W and, carried in the product as fp16 hi + lo, 2^-22·W more; all
// widened by 1 %; plus k·2^-22 for factors below fp16's normal range (absolute error 2^-25 each,
// |A| ≤ 2, |B| ≤ 1; were such a factor flushed to zero, its product, below 2^-13, would still fall
// within the 2^-9·h² ≥ 2^-11 the rounding term leaves unused per dimension since h ≥ 1/2), 2^-13 for
// the norm's lo part (an fp16 subnormal a flush would lose), and 2^-100. fp32 underflow of the
// scaled norms and scores (s² up to 2^120) costs at most about k·2^-29 in scaled units, within the
// k·2^-22 term's spare room.
double tile_score_error_bound(int dim, double scaled_half_span);
// The power of two s with H·s in [1/2, 1) (1 for H = 0).
double tile_scale(double half_span);
// Row splits per block of queries: `knob` when set (v15.tile_splits, at most one per stage), or enough to
// fill `resident` blocks with no split under kTileMinSplitStages stages.
int tile_splits(int blocks, int largest_chunk_rows, long long resident, int knob);
// `mode` is v15.tc (off turns the tile filter off too; on, with tile auto, keeps it off: the TF32
// filter was asked for), `tile` v15.tc_tile; `sm_count` the device's SMs (0: one split), `splits`
// v15.tile_splits (0: the rule), `ramp` v15.ramp (growing first chunks, only with fewer blocks of queries
// than the device holds: the later chunks then start from the exact best of the first one's rows).
// `waves` v15.tile_waves: the rule's splits fill the device that many times over (0: kTileTwoWaveBlocks's rule).
TilePlan plan_tile(const Problem& p, Mode mode, Mode tile, int cc_major, int sm_count = 0, int splits = 0, bool ramp = false, int waves = 0);
std::size_t tile_device_bytes(const Problem& p, const TilePlan& plan);
// The path's words: the plan, the `exact` distances the candidates took, taken `drain` at a time, besides
// `seed_rows` seed distances per query.
std::string tile_path_text(const Problem& p, const TilePlan& plan, unsigned long long exact, int drain, int seed_rows);
void tile_search(const Problem& p, const TilePlan& plan, Neighbors out, RunContext& ctx);

}  // namespace knn::gpu
