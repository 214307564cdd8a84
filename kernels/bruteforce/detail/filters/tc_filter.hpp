#pragma once
// v15's tensor-core filter for the nearest neighbour (topk = 1) of float data. The tensor cores
// score every (query, row) pair with TF32 inputs: S(r) = ‖r − c‖² − 2 (q − c)·(r − c), which
// orders the rows of one query as ‖q − r‖² does (c is the centre of the values' range). The
// score is not exact, but its error is bounded (score_error_bound below, from the range the
// harness found before the call), so a row can only be the answer when its score is within the
// bound of the best exact distance found so far. Those rows, the candidates, get the fused scan's
// own fp32 distance Σ(q − r)²; all others are passed over. The answer is the scan's, bit for bit:
// the filter only decides which rows need their distance computed. Host code, tested on the CPU.
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/problem.hpp"

namespace knn::gpu {

struct CollectPlan;  // kernels/bruteforce/detail/seed/seed_collect.hpp

// v15.tc: "auto" (the default: topk = 1 with 8 ≤ k ≤ 32, m ≥ 64, n ≥ 2^18; topk 2..32 with
// 3 ≤ k ≤ 32, m ≥ 1024, n ≥ 2^18), "off" (the fused scan), "on" (wherever the filter applies,
// whatever the shape: topk up to kFilterMaxTopk).
using TcMode = knn::Mode;

// A warp holds 4 tiles of 16 queries (the m16n8k8 TF32 shape) and scores 8 rows per step; a block
// is 4 warps with 64 queries each, which score the same 256 rows at a time, staged in shared memory.
inline constexpr int kTcTileQueries = 16;
inline constexpr int kTcTiles = 4;
inline constexpr int kTcWarps = 4;
inline constexpr int kTcWarpQueries = kTcTileQueries * kTcTiles;
inline constexpr int kTcBlockQueries = kTcWarpQueries * kTcWarps;
inline constexpr int kTcBlock = 32 * kTcWarps;
inline constexpr int kTcStepRows = 8;
inline constexpr int kTcStageRows = 256;
inline constexpr int kTcSliceDims = 8;  // one m16n8k8 product covers 8 dimensions
// At most 4 slices (k ≤ 32): the A fragments of 4 tiles stay in registers.
inline constexpr int kTcMaxDim = 32;
// The automatic rule (configs/studies/v15-tc.json on an H100, top-1 of uniform points, filter against
// the fused scan): k = 3 loses at every m and n measured (case 10: 0.69 ms, 0.77 with split values,
// against 0.64), k = 8 wins (1024 × 2^20: 0.87 against 1.20), k = 16 wins from n = 2^18 (0.52
// against 0.67) and loses at 2^16 (0.35 against 0.26), and 64 queries tie at the copy floor.
inline constexpr int kTcMinDim = 8;
inline constexpr int kTcMinQueries = kTcWarpQueries;
inline constexpr int kTcMinRows = 1 << 18;
// A block stages at least this many row tiles of its split.
inline constexpr long long kTcMinStagesPerBlock = 2;

struct TcPlan {
  bool chosen = false;
  std::string why;       // when not chosen: the reason, for the path line
  int slices = 0;        // ceil(k / 8)
  bool split = false;    // tc_split(k)
  float center = 0.f;    // c: subtracted from every value before it is rounded to TF32
  float half_span = 0.f; // H ≥ |x − c| for every value x (rounded up)
  float band = 0.f;      // E ≥ |computed score − true score| for every pair (rounded up)
  int query_groups = 0;  // blocks along the queries: ceil(m / 256)
  int splits = 1;        // blocks along one chunk's rows
  std::vector<int> chunk_rows;
  int chunks() const { return int(chunk_rows.size()) - 1; }
  int blocks_per_chunk() const { return query_groups * splits; }
};

// The bound E on |computed − true score| for k dimensions whose centred values lie in [-H, H]:
// with W = k·H², TF32 rounding of both factors (2^-11 each, and the fp32 centring) costs at most
// 1.01·2^-9·W over the k products, the tensor core's fp32 sums (modelled at 2^-20 per added term,
// looser than any rounding or truncation of a 24-bit sum) 3.02·(8·slices + 1)·2^-20·W, and the
// fp32 norm ‖r − c‖² (k + 3)·2^-23·W; the total is widened by 1 %.
// With `split` (each value hi + lo in TF32, products hi·hi + hi·lo + lo·hi): the dropped lo·lo
// and the rounding of lo cost 7.3·2^-22·W, the sums 3.02·(3·8·slices + 1)·2^-20·W.
double tc_score_error_bound(int dim, double half_span, bool split = false);
// Whether the filter splits the values of a k-dimensional problem: below 8 dimensions, which the
// automatic rule takes for topk 2..32 and tc=on for topk 1 (the band shrinks about 25-fold;
// on clustered 3-D points 5365 candidates per query became 175, but on uniform ones the three
// products cost more than the candidates saved at topk 1).
// `split` (v15.tc_split) on|off overrides it at any k ≤ 8 (for measuring; split values need k ≤ 8).
bool tc_split(int dim, Mode split = Mode::automatic);

// The tensor-core filter keeps each query's topk best keys (tc::offer in tc_filter.cuh), up to
// this many: every key that enters a list costs up to topk atomics. The fp32 filter keeps topk 1.
inline constexpr int kFilterMaxTopk = 32;
// The automatic rule for topk 2..32 (configs/studies/v15-filter-topk.json and seeds.json on an H100, the
// filter against the fused scan, results/h100/v15/filter-topk/): it won at every shape measured
// from k = 3, m = 1024 and n = 2^18 (1.3x at k 3 with 2^20 queries, 6-12x at k ≥ 16; case 416
// 0.59 s against 2.05), with split values below 8 dimensions (plain TF32 lost to the scan on
// clustered 5-D points); at k = 2 (case 200, topk 32) it lost 7x.
inline constexpr int kTcListMinDim = 3;
inline constexpr int kTcListMinQueries = 1024;
inline constexpr int kTcListMinRows = 1 << 18;

// The plan for problem p on a device of compute capability cc_major (TF32 needs 8) that holds
// `resident_blocks` filter blocks at once. `single_chunk` and `ramp` as in plan_scan (v15 keeps
// the filter's chunks equal: with the ramp it measured 2-7 % slower on an H100, docs/v15.md); `split`
// as in tc_split.
TcPlan plan_tc(const Problem& p, TcMode mode, int cc_major, long long resident_blocks, bool single_chunk,
               bool ramp = false, Mode split = Mode::automatic);

// The fp32 filter on CUDA cores (kernels/bruteforce/detail/filters/fp32_filter.cuh), for k below the
// tensor-core filter's range, where a TF32 score's band is too wide and the mma's overhead too large. The
// same score and the same proof as above, with every operation in fp32 in the fused scan's register
// layout: per pair k fused multiply-adds and one comparison, against the scan's 2k operations and
// its selection; each row's centring and norm are shared by the kFp32Queries queries of a thread.
// v15.fp32_filter: "auto" (topk 1, 2 <= k < 8, m >= 32, n >= 2^20), "off",
// "on" (wherever it applies).
using Fp32Mode = knn::Mode;
inline constexpr int kFp32MaxDim = kTcMinDim - 1;
// Queries per thread: 8, or 4 with v15.fp32_queries=4.
inline constexpr int kFp32Queries = 8;
// Where a thread reads its rows (v15.fp32_stage=auto|off|on): from a tile staged in shared
// memory with their centring and norms (f32::staged_kernel), or from global memory, centring each
// row itself (f32::filter_kernel). A tile's centring is shared by the block's query threads: auto
// stages from kFp32StageMinSlots query slots (⌈m / queries per thread⌉; 32 query threads a block,
// m >= 249 at 8 a thread). On an H100 (results/h100/v15/stage/, docs/v15.md) staging took case 10
// from 0.48-0.51 to 0.39-0.42 ms and 4096 × 2^20 at k = 7 from 2.83 to 1.89-1.93, lost at 32
// queries (1.05-1.43×), and from 64 to 512 queries won in one run and lost in the other (by up to 9 %).
inline constexpr int kFp32StageMinSlots = 32;
// The automatic rule (configs/studies/v15-fp32.json on an H100, against the fused scan): k = 1 loses
// everywhere (the scan's pair is 2 operations), n = 2^16 loses or ties at every k, 2^20 wins at
// k = 2, 3, 5, 7 from 32 queries (k = 3, 1024 × 2^20: 0.56 ms against 0.66).
inline constexpr int kFp32MinDim = 2;
inline constexpr int kFp32MinQueries = 32;
inline constexpr int kFp32MinRows = 1 << 20;

struct Fp32Plan {
  bool chosen = false;
  std::string why;
  float center = 0.f, half_span = 0.f, band = 0.f;  // as in TcPlan
  int queries_per_thread = kFp32Queries;
  bool stage = true;  // rows staged in shared memory
};

// The bound E on |computed − true score| for fp32 scores of k dimensions whose centred values lie
// in [-H, H]: W = k·H², and with u = 2^-24 the centring of q and r (u each), the norm's k
// roundings, the k fused multiply-adds of the score over terms summing to at most 3W: at most
// (4k + 6)·u·W to first order; widened by 2 % for the higher-order terms, plus 2^-100 for
// underflow.
double fp32_score_error_bound(int dim, double half_span);
// `queries` per thread (4 or 8) and `stage` (v15.fp32_queries, v15.fp32_stage) where it is chosen.
Fp32Plan plan_fp32(const Problem& p, Fp32Mode mode, int queries = kFp32Queries, Mode stage = Mode::automatic);
// The same scores for v15's candidate buffers (kernels/bruteforce/detail/seed/seed_collect.hpp), any topk up
// to 32: `chosen` where the values are known and finite and `scores` (v15.collect_scores) is not off.
Fp32Plan plan_collect_scores(const Problem& p, Mode scores = Mode::automatic);
// The buffers' scoring on `c` (chosen by plan_collect): fp32 scores where plan_collect_scores is
// chosen (`scores`), else exact distances; with `tc` (v15.collect_tc) on the tensor cores' plan instead,
// with auto (collect_tc_auto's shapes) the CUDA cores' plan with the tensor cores as the alternative the
// gate decides (c.tc_band); only on compute capability 8 and later. TF32 products, split into
// hi + lo with `split` (v15.tc_split) on.
void plan_collect_scoring(const Problem& p, CollectPlan& c, int sm_count, int cc_major, Mode scores = Mode::automatic,
                          Mode tc = Mode::automatic, Mode split = Mode::automatic);

// How the filters' keys become the answer, for v15's path.
inline std::string filter_lists_text(int topk) {
  return topk == 1 ? "best pair merged by atomicMin"
                   : "each query's " + std::to_string(topk) + " best keys kept by cascades of atomicMin, sorted at the end";
}

}  // namespace knn::gpu
