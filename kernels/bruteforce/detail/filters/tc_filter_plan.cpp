#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/bruteforce/detail/scan/scan_plan.hpp"
#include "kernels/bruteforce/detail/seed/seed_collect.hpp"
#include "kernels/bruteforce/detail/filters/tc_filter.hpp"
#include "kernels/bruteforce/detail/filters/tc_tile.hpp"

namespace knn::gpu {

double tc_score_error_bound(int dim, double half_span, bool split) {
  const int slices = (dim + kTcSliceDims - 1) / kTcSliceDims;
  const double w = double(dim) * half_span * half_span;
  const double products = split ? 7.3 * std::ldexp(1.0, -22) : 1.01 * std::ldexp(1.0, -9);
  const int terms = (split ? 3 : 1) * kTcSliceDims * slices + 1;
  const double rel = products + 3.02 * terms * std::ldexp(1.0, -20) + (dim + 3) * std::ldexp(1.0, -23);
  // Tensor cores may flush subnormal products: an absolute term covers them.
  return 1.01 * rel * w + std::ldexp(1.0, -100);
}

double fp32_score_error_bound(int dim, double half_span) {
  const double w = double(dim) * half_span * half_span;
  return 1.02 * (4.0 * dim + 6.0) * std::ldexp(1.0, -24) * w + std::ldexp(1.0, -100);
}

bool tc_split(int dim, Mode split) {
  switch (split) {
    case Mode::on: return dim <= kTcSliceDims;
    case Mode::off: return false;
    default: return dim < kTcSliceDims;
  }
}

namespace {

// The float at or above x.
float round_up(double x) {
  float f = float(x);
  if (double(f) < x) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

// The checks both filters share (the parameter `name` not off, topk within the filter's limit, k within the kernel's limit, every value finite, scores far
// from overflow) and the centre c and half span H of the values: an empty string when they pass,
// otherwise the reason. H is widened by 2^-20 before use, so rounding c to float never leaves a
// value outside [c - H, c + H].
std::string filter_range(const Problem& p, Mode mode, const char* name, int max_dim, int max_topk,
                         double& center, double& half) {
  const ValueTraits& v = p.values;
  if (mode == Mode::off) return fmt::format("{}=off", name);
  if (p.topk > max_topk)
    return max_topk == 1 ? fmt::format("topk {}: the filter keeps one neighbour", p.topk)
                         : fmt::format("topk {} > {}: the filter's lists hold at most {}", p.topk, max_topk, max_topk);
  if (p.dim > max_dim) return fmt::format("k = {} > {}", p.dim, max_dim);
  if (!v.known) return "values not examined";
  if (!v.finite) return "not every value is finite";
  center = double(float(0.5 * (double(v.lowest) + double(v.highest))));
  half = std::max(double(v.highest) - center, center - double(v.lowest)) * (1.0 + std::ldexp(1.0, -20));
  // The scores themselves must stay far from float's overflow.
  if (!(double(p.dim) * half * half * 4.0 < 1e36))
    return fmt::format("values {:g} .. {:g}: scores could overflow", v.lowest, v.highest);
  return {};
}

}  // namespace

TcPlan plan_tc(const Problem& p, TcMode mode, int cc_major, long long resident_blocks, bool single_chunk, bool ramp,
               Mode split) {
  TcPlan plan;
  double center = 0, half = 0;
  plan.why = filter_range(p, mode, "tc", kTcMaxDim, kFilterMaxTopk, center, half);
  if (!plan.why.empty()) return plan;
  if (cc_major < 8) {
    plan.why = fmt::format("compute capability {}.x has no TF32 tensor cores", cc_major);
    return plan;
  }
  plan.center = float(center);
  plan.split = tc_split(p.dim, split);
  plan.half_span = round_up(half);
  plan.band = round_up(tc_score_error_bound(p.dim, half, plan.split));
  plan.slices = (p.dim + kTcSliceDims - 1) / kTcSliceDims;
  const bool lists = p.topk > 1;
  const int min_dim = lists ? kTcListMinDim : kTcMinDim, min_queries = lists ? kTcListMinQueries : kTcMinQueries;
  const int min_rows = lists ? kTcListMinRows : kTcMinRows;
  if (mode == TcMode::automatic && (p.dim < min_dim || p.m < min_queries || p.n < min_rows)) {
    plan.why = fmt::format("k = {}, m = {}, n = {}: the filter pays {}from k ≥ {}, m ≥ {} and n ≥ {}", p.dim, p.m, p.n,
                           lists ? "for topk > 1 " : "", min_dim, min_queries, min_rows);
    return plan;
  }
  plan.query_groups = (p.m + kTcBlockQueries - 1) / kTcBlockQueries;
  plan.chunk_rows = plan_chunks(p.n, std::size_t(p.dim) * sizeof(float), single_chunk, ramp);
  const long long chunk_stages = ((long long)largest_chunk(plan.chunk_rows) + kTcStageRows - 1) / kTcStageRows;
  long long splits = (resident_blocks + plan.query_groups - 1) / plan.query_groups;
  splits = std::min(splits, std::max(1LL, chunk_stages / kTcMinStagesPerBlock));
  plan.splits = int(std::max(1LL, splits));
  plan.chosen = true;
  return plan;
}

Fp32Plan plan_fp32(const Problem& p, Fp32Mode mode, int queries, Mode stage) {
  Fp32Plan plan;
  double center = 0, half = 0;
  plan.why = filter_range(p, mode, "fp32_filter", kFp32MaxDim, 1, center, half);
  if (!plan.why.empty()) return plan;
  plan.center = float(center);
  plan.half_span = round_up(half);
  plan.band = round_up(fp32_score_error_bound(p.dim, half));
  if (mode == Fp32Mode::automatic && (p.dim < kFp32MinDim || p.m < kFp32MinQueries || p.n < kFp32MinRows)) {
    plan.why = fmt::format("k = {}, m = {}, n = {}: the filter pays from k ≥ {}, m ≥ {} and n ≥ {}", p.dim, p.m, p.n,
                           kFp32MinDim, kFp32MinQueries, kFp32MinRows);
    return plan;
  }
  plan.queries_per_thread = queries;
  const long long slots = (p.m + plan.queries_per_thread - 1) / plan.queries_per_thread;
  plan.stage = stage == Mode::on || (stage == Mode::automatic && slots >= kFp32StageMinSlots);
  plan.chosen = true;
  return plan;
}

Fp32Plan plan_collect_scores(const Problem& p, Mode scores) {
  Fp32Plan plan;
  double center = 0, half = 0;
  plan.why = filter_range(p, scores, "collect_scores", kCollectMaxDim, kSeedMaxTopk, center, half);
  if (!plan.why.empty()) return plan;
  plan.center = float(center);
  plan.half_span = round_up(half);
  plan.band = round_up(fp32_score_error_bound(p.dim, half));
  plan.chosen = true;
  return plan;
}

void plan_collect_scoring(const Problem& p, CollectPlan& c, int sm_count, int cc_major, Mode score_mode, Mode tc, Mode split_mode) {
  const Fp32Plan scores = plan_collect_scores(p, score_mode);
  c.scores = scores.chosen, c.center = scores.center, c.band = scores.band;
  if (!scores.chosen || tc == Mode::off || cc_major < 8) return;
  if (tc == Mode::automatic && !collect_tc_auto(p.m, p.dim, p.topk)) return;
  // TF32 without the split by default: the split's three products took case 405 482 ms against 239.
  const bool split = split_mode == Mode::on;
  const float band = round_up(tc_score_error_bound(p.dim, scores.half_span, split));
  if (tc == Mode::automatic) {
    CollectPlan t = c;
    if (plan_collect_tensor(t, p.m, p.n, p.topk, sm_count, split)) c.tc_band = band, c.tensor_split = split;
  } else if (plan_collect_tensor(c, p.m, p.n, p.topk, sm_count, split)) {
    c.band = band;
  }
}

double tile_scale(double half_span) {
  if (!(half_span > 0)) return 1.0;
  int e = 0;
  std::frexp(half_span, &e);  // half_span = f·2^e with f in [1/2, 1), which half_span·s is
  return std::ldexp(1.0, -e);
}

double tile_score_error_bound(int dim, double scaled_half_span) {
  const double w = double(dim) * scaled_half_span * scaled_half_span;
  const double rel = 1.01 * std::ldexp(1.0, -9) + 8.1 * (kTileDims + 1) * std::ldexp(1.0, -20) + (dim + 3) * std::ldexp(1.0, -23);
  // The norm carried as fp16 hi + lo (k ≤ 12): within 2^-22 of it, or, where lo is an fp16 subnormal that
  // the tensor cores might flush, off by lo itself: below 2^-14, counted as 2^-13.
  return 1.01 * (rel + std::ldexp(1.0, -22)) * w + dim * std::ldexp(1.0, -22) + std::ldexp(1.0, -13) + std::ldexp(1.0, -100);
}

int tile_splits(int blocks, int largest_chunk_rows, long long resident, int knob) {
  const long long stages = std::max(1, tile_stages(largest_chunk_rows));
  long long splits = knob > 0 ? knob : std::min((resident + blocks - 1) / std::max(1, blocks), stages / kTileMinSplitStages);
  splits = std::min<long long>({splits, stages, kTileMaxSplits});
  return int(std::max(1LL, splits));
}

TilePlan plan_tile(const Problem& p, Mode mode, Mode tile, int cc_major, int sm_count, int splits, bool ramp, int waves) {
  TilePlan plan;
  double center = 0, half = 0;
  plan.why = mode == Mode::off ? std::string("tc=off") : filter_range(p, tile, "tc_tile", kTileDims, kTileMaxTopk, center, half);
  if (!plan.why.empty()) return plan;
  if (cc_major < 8) {
    plan.why = fmt::format("compute capability {}.x has no fp16 mma.sync with asynchronous copies", cc_major);
    return plan;
  }
  if (!(half < 1e18 && (half == 0 || half > 1e-18))) {
    plan.why = fmt::format("values within {:g} of their centre: the scale 2^e would leave float's range", half);
    return plan;
  }
  if (tile == Mode::automatic && mode == Mode::on) {
    plan.why = "tc=on asks for the TF32 tensor-core filter (tc_tile=on takes this one)";
    return plan;
  }
  const int min_rows = p.topk == 1 ? kTileNearestMinRows : kTileMinRows;
  if (tile == Mode::automatic && (p.dim < kTileMinDim || p.m < kTileMinQueries || p.n < min_rows)) {
    // A fixed text: v15 plans this on every call, small ones included, and nothing prints it.
    static_assert(kTileMinDim == 5 && kTileMinQueries == 1024 && kTileMinRows == 1 << 17 && kTileNearestMinRows == 1 << 16,
                  "the text below names the rule");
    plan.why = "the tile filter pays from k ≥ 5, m ≥ 1024 and n ≥ 131072 (65536 at topk 1)";
    return plan;
  }
  plan.center = float(center);
  plan.half_span = round_up(half);
  plan.scale = float(tile_scale(plan.half_span));
  plan.band = round_up(tile_score_error_bound(p.dim, double(plan.half_span) * plan.scale));
  plan.blocks = (p.m + kTileBlockQueries - 1) / kTileBlockQueries;
  const std::size_t row_bytes = std::size_t(p.dim) * sizeof(float);
  const long long resident = (long long)std::max(0, sm_count) * (p.dim <= kTileFoldDims ? kTileFoldBlocksPerSm : kTileBlocksPerSm);
  // Few queries (fewer blocks than the device holds): the rows are split, and the chunks ramp up from
  // 512 KiB, so the first chunk's search starts sooner and the next ones start from the exact best of its
  // rows. Many queries keep equal chunks, as measured.
  plan.ramp = ramp && plan.blocks < resident;
  plan.chunk_rows = plan_chunks(p.n, row_bytes, p.self_join, plan.ramp);
  plan.waves = splits > 0 ? 1 : waves > 0 ? waves : plan.blocks >= kTileTwoWaveBlocks && plan.blocks < resident ? 2 : 1;  // the knob: its splits
  for (int c = 0; c < plan.chunks(); ++c)
    plan.chunk_splits.push_back(tile_splits(plan.blocks, plan.chunk_rows[c + 1] - plan.chunk_rows[c], resident * plan.waves, splits));
  plan.chosen = true;
  return plan;
}

std::string tile_path_text(const Problem& p, const TilePlan& plan, unsigned long long exact, int drain, int seed_rows) {
  const auto [fewest, most] = std::minmax_element(plan.chunk_splits.begin(), plan.chunk_splits.end());
  const std::string splits = plan.chunk_splits.empty() || *most == 1 ? std::string()
                             : *fewest == *most ? fmt::format(" x {} splits of each chunk's rows (keys merged in global memory)", *most)
                                                : fmt::format(" x {}..{} splits of each chunk's rows (keys merged in global memory)", *fewest, *most);
  const std::string waves = splits.empty() || plan.waves == 1 ? std::string() : fmt::format(", {} times the blocks the device holds,", plan.waves);
  return fmt::format(
      "tile filter: k={} as one fp16 m16n8k16 product, scores s^2(||r-c||^2 - 2(q-c).(r-c)) with c = {:g}, s = 2^{}, less "
      "each query's threshold ({}), error bound {:.3g} (scaled; values within {:g} of c); {} exact fp32 distances for candidates ({:.1f} per query, {:.4f} % of "
      "the pairs, queued by each warp and taken {} at a time; {} seed distances per query besides); {} blocks{} of {} threads ({} warps x {} queries), rows packed once per chunk "
      "and streamed through shared memory {} at a time; {}; {}",
      p.dim, plan.center, std::ilogb(plan.scale),
      p.dim <= kTileFoldDims ? "norm and threshold as 4 more dimensions" : "accumulators started from the norm less the threshold", plan.band, plan.half_span,
      exact, double(exact) / p.m, 100.0 * double(exact) / (double(p.m) * p.n), drain, seed_rows, plan.blocks, splits + waves, kTileBlock, kTileWarps,
      16 * kTileTiles, 8 * kTileStageGroups, chunks_text(plan.chunk_rows, p.dim, plan.ramp), filter_lists_text(p.topk) + " (in shared memory)");
}

}  // namespace knn::gpu
