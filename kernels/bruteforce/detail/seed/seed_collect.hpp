#pragma once
// v15's candidate buffers for seeded scans (kernels/bruteforce/detail/seed/scan_seed.hpp gives every query a
// bound on its topk-th distance). Instead of a sorted list of topk pairs per query in registers, a
// thread keeps only its queries and their limits, compares each row with the limit (one comparison
// per pair, no list walk: an fp32 score against a proven threshold where the values' range is
// known, else the exact distance against the bound) and appends the few rows whose exact distance
// is below the bound to a buffer of `capacity` (distance, index) keys in global memory, one per
// (query, split). A buffer that fills is cut back to its topk smallest keys by its own thread, and
// the bound drops to the topk-th of them. A last kernel takes each query's topk smallest keys from
// its buffers. The registers freed from the lists let more warps hide the loads: this is what made
// the seeded self-join fast. plan_collect is pure C++ (tested on the CPU); seed_collect.cu runs it.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "core/params.hpp"
#include "kernels/bruteforce/detail/scan/scan_plan.hpp"
#include "kernels/bruteforce/detail/seed/scan_seed.hpp"

#ifdef __CUDACC__
#define KNN_COLLECT_FN __host__ __device__ __forceinline__
#else
#define KNN_COLLECT_FN inline
#endif

namespace knn::gpu {

// Compiled for k = 1 .. kCollectMaxDim (the seed's automatic rule stops at 5 as well).
constexpr int kCollectMaxDim = 5;
// A buffer holds max(kCollectMinCapacity, kCollectPerTopk · topk) keys.
constexpr int kCollectPerTopk = 4, kCollectMinCapacity = 32;
// The buffers (8 bytes a key, one buffer per query and split) take at most this many bytes: the
// splits shrink before they grow past it, and without room for one split the lists keep the scan.
constexpr std::size_t kCollectBudget = std::size_t(512) << 20;
// A split scans at least this many rows.
constexpr long long kCollectMinRowsPerSplit = 2048;
// Threads per block of the collecting kernel.
constexpr int kCollectBlock = 128;

struct CollectPlan {
  bool chosen = false;
  int queries_per_thread = 1;  // Q (1, 2 or 4: a template constant)
  int query_groups = 1;        // blocks along the queries: ceil(m / (Q · kCollectBlock))
  int splits = 1;              // buffers per query: pieces of the rows, each scanned by one block
  // The blocks launched. Balanced (see collect_begin): the blocks share the query groups' rows
  // equally, a block's range may span groups and a group's rows several blocks (at most `splits`).
  // Else aligned: query_groups · splits blocks, a group's rows in `splits` equal pieces.
  long long grid = 1;
  bool balanced = false;
  int capacity = 0;            // keys per buffer
  // fp32 scores ‖r − c‖² − 2 (q − c)·(r − c) against each query's threshold first, the exact
  // distance only where a score passes (the fp32 filter's proof,
  // kernels/bruteforce/detail/filters/tc_filter.hpp); set by the caller from plan_collect_scores (the values'
  // range must be known).
  bool scores = false;
  float center = 0.f, band = 0.f;
  // The scores from the tensor cores instead (kernels/bruteforce/detail/seed/seed_collect_tc.cu;
  // plan_collect_tensor): TF32 (split: hi + lo, three products), `band` then the TF32 score's error bound.
  // Blocks of kCollectTcQueries queries; 4 buffers (one per lane of a query) per split of the rows.
  bool tensor = false, tensor_split = false;
  // On a CUDA-core plan: the tensor cores as the alternative the seed's bounds decide between
  // (tc_band > 0: the TF32 band; see kCollectTcGateLevel), set by plan_collect_scoring.
  float tc_band = 0.f;
  Mode balance = Mode::automatic;  // v15.collect_balance, for balance_collect (set by plan_collect)
  std::string why;             // why not, when not chosen
  long long blocks() const { return grid; }
  std::size_t buffer_bytes(int m) const { return std::size_t(m) * splits * capacity * sizeof(unsigned long long); }
};

// v15.collect: auto (wherever the seed runs at k <= kCollectMaxDim), off (the register lists),
// on (the same as auto: the buffers never change an answer). v15.collect_queries: 1, 2 or 4
// queries per thread instead of the rule below.

// Joins of many queries take the buffers before the filters and before a chunked copy (the seed
// needs every reference on the device before the search starts): from kCollectMinJoinQueries
// queries the search takes far longer than the copy (case 405: the copy 0.4 ms of 20 MiB).
// collect=on takes them first at any m; the seed must run with one chunk.
constexpr int kCollectMinJoinQueries = 1 << 16;
inline bool collect_first(int m, int n, int dim, int topk, Mode collect, Mode seed) {
  const int capacity = std::max(kCollectMinCapacity, kCollectPerTopk * topk);
  return collect != Mode::off && dim <= kCollectMaxDim && (collect == Mode::on || m >= kCollectMinJoinQueries) &&
         std::size_t(m) * capacity * sizeof(unsigned long long) <= kCollectBudget && plan_seed(m, n, dim, topk, 1, seed).chosen;
}

// The balanced ranges. `units` = query_groups · row groups (kScanGroup rows) in group-major order;
// block b of `grid` scans units [collect_begin(b), collect_begin(b + 1)), so every block has the
// same work (to one unit) and a grid of one full wave ends at once: with blocks of whole groups,
// case 405's 2048 blocks made 2.2 waves of 924 (7 per SM; Nsight Compute, results/h100/v15/
// collect/scores/). A group's piece is the block's rank among the blocks that scan the group:
// b - collect_block_of(first unit of the group). The planner keeps units · grid below 2^62.
KNN_COLLECT_FN long long collect_begin(long long units, long long b, long long grid) { return units * b / grid; }
KNN_COLLECT_FN long long collect_block_of(long long unit, long long units, long long grid) {
  return ((unit + 1) * grid - 1) / units;
}

// Block b's units [lo, hi) and the piece (buffer) of its first group: balanced (above), or aligned
// (group b / splits, its piece b % splits of the rows). The collecting kernel and its tests use it.
struct CollectRange {
  long long lo, hi;
  int piece;
};
KNN_COLLECT_FN CollectRange collect_range(long long b, long long row_groups, long long query_groups, long long grid,
                                          int splits, bool balanced) {
  const long long units = query_groups * row_groups;
  if (balanced) {
    const long long lo = collect_begin(units, b, grid), hi = collect_begin(units, b + 1, grid);
    return {lo, hi, int(b - collect_block_of(lo / row_groups * row_groups, units, grid))};
  }
  const long long first = b / splits * row_groups;
  return {first + row_groups * (b % splits) / splits, first + row_groups * (b % splits + 1) / splits, int(b % splits)};
}

// v15.collect_balance: on (balanced ranges where the budget allows, see balance_collect), off
// and auto (blocks of whole groups). Balanced, case 405 took 333.8-334.0 ms on an H100 against
// 330.1-330.3 with whole groups in alternating processes (results/h100/v15/balance/): the single
// wave's blocks end at different times (achieved occupancy 34 % of 44 %), which the 2.2 waves of
// whole groups even out.

// The most buffers per query that balance_collect gives a plan on any device: what the
// budget allows, and at most two more than the splits of kCollectMinRowsPerSplit rows.
inline int collect_max_splits(const CollectPlan& c, int m, int n) {
  const std::size_t one_split = std::size_t(m) * c.capacity * sizeof(unsigned long long);
  const long long by_budget = std::max<long long>(1, (long long)(kCollectBudget / one_split));
  return int(std::min(by_budget, std::max(1LL, (long long)n / kCollectMinRowsPerSplit) + 2));
}

// The grid for `resident` blocks at once (SMs · blocks per SM): with `on`, one balanced wave where at least
// kCollectMinRowsPerSplit rows a block remain on average and the buffers of its pieces fit the
// budget, else whole groups in splits of the rows as before (at most `resident` blocks' worth).
inline void balance_collect(CollectPlan& c, int m, int n, long long resident, Mode mode) {
  const long long qg = c.query_groups, rg = (n + kScanGroup - 1) / kScanGroup, units = qg * rg;
  const std::size_t one_split = std::size_t(m) * c.capacity * sizeof(unsigned long long);
  const long long by_budget = std::max<long long>(1, (long long)(kCollectBudget / one_split));
  const long long by_rows = std::max(1LL, (long long)n / kCollectMinRowsPerSplit), most = collect_max_splits(c, m, n);
  resident = std::max(1LL, resident);
  const long long grid = std::min(resident, qg * by_rows);
  // The most blocks that scan one group: 1 where whole groups tile the blocks, grid / qg where the
  // blocks tile whole groups, else at most one more than a group's rows over a block's least.
  const long long pieces = qg % grid == 0 ? 1 : grid % qg == 0 ? grid / qg : (rg + units / grid - 1) / (units / grid) + 1;
  c.balanced = mode == Mode::on && pieces <= most && units < (1LL << 62) / grid;
  if (c.balanced) {
    c.grid = grid, c.splits = int(pieces);
  } else {
    c.splits = int(std::max(1LL, std::min({(resident + qg - 1) / qg, by_rows, by_budget})));
    c.grid = qg * c.splits;
  }
}

// Queries per thread by queries per SM: 4 from kCollectQueriesPerSmFor4, 2 from
// kCollectQueriesPerSmFor2, else 1. On an H100 (132 SMs; results/h100/v15/collect/scores/), with
// scores: case 200 (200 064 queries, 1516 per SM) took 11.0 ms with 2 against 11.4 with 4 and 12.6
// with 1; case 405 (2^20, 7944 per SM) 349 ms with 4 against 458 with 1; case 201 (8192, 62 per
// SM) 0.42-0.43 ms with 1 against 0.60 with 4.
constexpr int kCollectQueriesPerSmFor4 = 4096, kCollectQueriesPerSmFor2 = 512;
// plan_collect's guess at the blocks an SM holds at once; SeedCollect balances the plan again
// with its kernel's occupancy.
constexpr int kCollectBlocksPerSm = 8;

// The candidate buffers for a seeded scan of m queries against n rows on a device of `sm_count`
// SMs; `queries` forces Q (0: the rule above; then splits of the rows until the device is full);
// `balance` as in balance_collect.
inline CollectPlan plan_collect(int m, int n, int dim, int topk, bool seeded, int sm_count, Mode mode,
                                int queries = 0, Mode balance = Mode::automatic) {
  CollectPlan c;
  c.balance = balance;
  c.capacity = std::max(kCollectMinCapacity, kCollectPerTopk * topk);
  const std::size_t one_split = std::size_t(m) * c.capacity * sizeof(unsigned long long);
  if (mode == Mode::off) c.why = "collect=off";
  else if (!seeded) c.why = "no seed";
  else if (dim > kCollectMaxDim)
    c.why = "k = " + std::to_string(dim) + " (compiled for k <= " + std::to_string(kCollectMaxDim) + ")";
  else if (one_split > kCollectBudget)
    c.why = "the buffers would take " + std::to_string(one_split >> 20) + " MiB (at most " +
            std::to_string(kCollectBudget >> 20) + ")";
  else c.chosen = true;
  if (!c.chosen) return c;
  const long long sms = std::max(1, sm_count), target = sms * kCollectBlocksPerSm;
  const auto groups_for = [&](int q) { return (m + (long long)q * kCollectBlock - 1) / ((long long)q * kCollectBlock); };
  c.queries_per_thread = queries > 0                                 ? queries
                         : m >= sms * kCollectQueriesPerSmFor4 ? 4
                         : m >= sms * kCollectQueriesPerSmFor2 ? 2
                                                                : 1;
  c.query_groups = int(groups_for(c.queries_per_thread));
  balance_collect(c, m, n, target, c.balance);
  return c;
}

// The tensor cores' geometry (kernels/bruteforce/detail/seed/seed_collect_tc.cu): a block scores 256 queries,
// a (query, lane) pair has its own buffer of max(kCollectTcMinCapacity, kCollectTcPerTopk · topk)
// keys, 4 per query and split of the rows; splits until kCollectBlocksPerSm blocks per SM, of at
// least kCollectMinRowsPerSplit rows, within the budget.
constexpr int kCollectTcQueries = 256, kCollectTcLanes = 4, kCollectTcMinCapacity = 16, kCollectTcPerTopk = 2;
// v15.collect_tc: auto (collect_tc_auto's shapes, then the seed's bounds decide on the device),
// off, on (the tensor cores wherever the scores run, no gate).
// The shapes `auto` offers the tensor cores: k 4..5 (the TF32 product covers 8 dimensions: at k <= 3
// the CUDA cores' k multiply-adds cost less; H100, results/h100/v15/collect-tc/batched/: case 200,
// k 2, 26.6 ms against 10.7; 1900, k 3, 243 against 233), topk <= 8 (2003, k 5 and topk 16: 11.2
// against 5.8) and joins from kCollectMinJoinQueries queries (405: 239 against 332; 1903: 17.7
// against 30.5).
constexpr int kCollectTcMinDim = 4, kCollectTcMaxTopk = 8;
inline bool collect_tc_auto(int m, int dim, int topk) {
  return dim >= kCollectTcMinDim && dim <= kCollectMaxDim && topk <= kCollectTcMaxTopk && m >= kCollectMinJoinQueries;
}
// The gate. A TF32 band E wide against a query's bound b lets many rows' scores pass, each then
// costing an exact distance: about topk · ((b + 2E) / b)^(k/2) rows pass where topk lie within b.
// The tensor cores run where at most kCollectTcGateShare of the queries would have that inflation
// above 4^(kCollectTcGateLevel + 2) = 256, i.e. b < 2E / (256^(2/k) - 1). H100, the seed's bounds
// against TF32 bands (results/h100/v15/collect-tc/gate/): clustered data has most bounds far below
// E and took 2-2.3x longer on the tensor cores (1901: 668 ms against 335; k 4: 634 against 270),
// uniform data wins (405: 241 against 330; k 4: 236 against 270; k 5 topk 8: 67 against 96). The
// gate kernel counts the queries above inflations 16, 64, 256, 1024, 4096 (the path reports them).
constexpr int kCollectTcGateLevels = 5, kCollectTcGateLevel = 2;  // inflation 4^(level + 2)
constexpr double kCollectTcGateShare = 0.1;
// The bound below which a query's inflation exceeds 4^(level + 2) at band E and k dimensions.
inline float collect_tc_gate_bound(float band, int dim, int level) {
  const double inflation = std::pow(4.0, level + 2);
  return float(2.0 * band / (std::pow(inflation, 2.0 / dim) - 1.0));
}
// Turns a chosen plan into the tensor cores' (scores and center set by the caller, `band` then
// the TF32 band); false, the plan unchanged, where the buffers would not fit the budget.
inline bool plan_collect_tensor(CollectPlan& c, int m, int n, int topk, int sm_count, bool split) {
  const int capacity = std::max(kCollectTcMinCapacity, kCollectTcPerTopk * topk);
  const std::size_t one_split = std::size_t(m) * kCollectTcLanes * capacity * sizeof(unsigned long long);
  if (!c.chosen || one_split > kCollectBudget) return false;
  const long long groups = (m + kCollectTcQueries - 1) / kCollectTcQueries;
  const long long target = (long long)std::max(1, sm_count) * kCollectBlocksPerSm;
  const long long splits = std::min({(target + groups - 1) / groups, std::max(1LL, (long long)n / kCollectMinRowsPerSplit),
                                     (long long)(kCollectBudget / one_split)});
  c.tensor = true, c.tensor_split = split, c.balanced = false;
  c.capacity = capacity, c.query_groups = int(groups);
  c.splits = kCollectTcLanes * int(std::max(1LL, splits));
  c.grid = groups * (c.splits / kCollectTcLanes);
  return true;
}

}  // namespace knn::gpu
