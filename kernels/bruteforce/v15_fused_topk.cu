// v15: brute-force top-k at the copy floor. Its paths, their rules and parameters: kernels/bruteforce/README.md
// and engine_params() (engine.hpp). The distance and the selection are one kernel (detail/scan/fused_scan.cuh):
// a thread holds 1, 2 or 4 queries and scans its share of the references 4 rows at a time, keeping each query's
// best topk in registers (topk <= 32) or a max-heap in global scratch; no distance matrix is stored. References
// are copied in chunks on one stream while a second searches the chunks already there. Few queries: a chunk's
// rows are split across blocks and the partial lists merged (atomicMin for topk = 1, else a segmented sort,
// detail/scan/topk_merge.cu). Distances are Σ(q − r)² in fp32 with fused multiply-adds. Any k, m and n,
// self-joins. Instead, where they apply: the exact int8 path for whole numbers (detail/int8/exact_int8.hpp);
// the tensor-core filter (detail/filters/tc_filter.hpp): TF32 scores with a proven bound pick the rows whose
// exact distance is computed, the answers are the scan's; its fp16 tile kernel from 1024 queries
// (detail/filters/tc_tile.hpp); the same filter on CUDA cores below 8 dimensions (detail/filters/fp32_filter.cuh);
// seeded bounds and candidate buffers for joins of many queries (detail/seed/); a grid of few queries in 1-3
// dimensions that each row meets only where their bounds reach (detail/grid/query_grid.hpp).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/cuda/runtime.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "kernels/bruteforce/detail/int8/exact_int8.hpp"
#include "kernels/bruteforce/detail/filters/fp32_filter.cuh"
#include "kernels/bruteforce/detail/scan/fused_scan.cuh"
#include "kernels/bruteforce/engine.hpp"
#include "kernels/bruteforce/detail/scan/scan_path.hpp"
#include "kernels/bruteforce/detail/scan/scan_plan.hpp"
#include "kernels/bruteforce/detail/seed/scan_seed_device.hpp"
#include "kernels/bruteforce/detail/seed/seed_collect_device.hpp"
#include "kernels/bruteforce/detail/filters/tc_filter.cuh"
#include "kernels/bruteforce/detail/filters/tc_filter.hpp"
#include "kernels/bruteforce/detail/filters/tc_tile.hpp"
#include "kernels/bruteforce/detail/grid/query_grid.hpp"
#include "kernels/bruteforce/detail/scan/topk_merge.hpp"

namespace {

namespace cuda = knn::cuda;
namespace gpu = knn::gpu;
using gpu::scan::List, gpu::scan::list_for, gpu::scan::list_name, gpu::scan::compiled_dim;
using knn::Mode;

constexpr int kMaxTopk = knn::gpu::kFusedTopkMax;
constexpr int kMaxBlocksPerSm = 16;  // resident 128-thread blocks per SM assumed by device_bytes: an upper bound

using Kernel = void (*)(gpu::scan::Args);

// The tensor-core filter's kernel for k dimensions (nullptr above its limit).
Kernel pick_filter(int dim, Mode split) {
  switch ((dim + gpu::kTcSliceDims - 1) / gpu::kTcSliceDims) {  // split TF32 below 8 dimensions (gpu::tc_split)
    case 1: return gpu::tc_split(dim, split) ? gpu::tc::filter_kernel<1, true> : gpu::tc::filter_kernel<1, false>;
    case 2: return gpu::tc::filter_kernel<2, false>;
    case 3: return gpu::tc::filter_kernel<3, false>;
    case 4: return gpu::tc::filter_kernel<4, false>;
    default: return nullptr;
  }
}

std::size_t padded_rows(int n) { return (std::size_t(n) + gpu::kScanGroup - 1) / gpu::kScanGroup * gpu::kScanGroup; }
// An `auto` parameter's choice on this problem, recorded for the result (RunContext::chosen).
void note(knn::RunContext& ctx, const char* name, Mode mode, bool taken) {
  if (mode == Mode::automatic) ctx.chosen[name] = taken ? "on" : "off";
}

// The tensor-core filter's dynamic shared memory for its block's lists: topk > 1, one split, v15.shared_lists
// on, and its static shared memory plus the lists within the device's limit per block; else 0 (global memory).
std::size_t shared_list_bytes(const gpu::TcPlan& tc, int topk, Kernel kernel, int device, bool shared_lists) {
  if (!tc.chosen || topk < 2 || tc.splits != 1 || !shared_lists) return 0;
  const std::size_t bytes = std::size_t(gpu::kTcBlockQueries) * topk * sizeof(unsigned long long);
  cudaFuncAttributes attributes{};
  KNN_CUDA_TRY(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
  int limit = 0;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  return attributes.sharedSizeBytes + bytes <= std::size_t(limit) ? bytes : 0;
}

// The scan's plan, or the fp32 filter's (the same layout) with its `filter_queries` per thread (its lists
// are the keys in global memory: no partial lists, so no budget for them). `single`: one chunk. The
// fewest row groups a thread scans in its split: v15.min_groups, else kMinGroupsNearest for the scan's
// topk 1 (fewer where that leaves SMs idle: nearest_min_groups), heap_min_groups for its heaps, kMinGroupsPerThread otherwise (scan_plan.hpp).
gpu::ScanPlan plan_for(const knn::Problem& p, const gpu::EngineSettings& s, long long resident_blocks, int sms,
                       int filter_queries, bool single) {
  const List l = list_for(p.topk);
  const int knob = s.min_groups;
  if (filter_queries > 0)
    return gpu::plan_scan(p.m, p.n, p.dim, 1, filter_queries, resident_blocks, p.self_join, s.ramp, s.taper,
                          knob > 0 ? knob : gpu::kMinGroupsPerThread);
  const auto plan = [&](int groups) {
    return gpu::plan_scan(p.m, p.n, p.dim, p.topk, gpu::scan::queries_per_thread(l), resident_blocks,
                          p.self_join || l == List::heap || single, s.ramp, s.taper, groups);
  };
  const gpu::ScanPlan base = plan(knob > 0 ? knob : l == List::one ? gpu::kMinGroupsNearest : gpu::kMinGroupsPerThread);
  if (l == List::one && knob == 0) {
    const int fewer = gpu::nearest_min_groups(base, sms, gpu::kMinGroupsNearest);
    return fewer < gpu::kMinGroupsNearest ? plan(fewer) : base;
  }
  const int groups = l == List::heap && knob == 0 ? gpu::heap_min_groups(base, p.m, p.topk, sms, gpu::kMinGroupsPerThread) : 0;
  return groups > gpu::kMinGroupsPerThread ? plan(groups) : base;
}

// The candidate buffers before the filters and a chunked copy
// (kernels/bruteforce/detail/seed/seed_collect.hpp), with fp32 scores only (exact distances for every pair
// took case 405 1340 ms), and never where a filter is asked for (tc=on, fp32_filter=on).
bool buffers_first(const knn::Problem& p, const gpu::EngineSettings& s) {
  return s.tc != Mode::on && s.fp32_filter != Mode::on && gpu::plan_collect_scores(p, s.collect_scores).chosen &&
         gpu::collect_first(p.m, p.n, p.dim, p.topk, s.collect, s.seed);
}

// The seed for the scan (kernels/bruteforce/detail/seed/scan_seed.hpp); never with a filter.
gpu::SeedPlan seed_plan(const knn::Problem& p, const gpu::EngineSettings& s, const gpu::ScanPlan& plan, bool filter) {
  return filter ? gpu::SeedPlan{false, 0, "a filter runs"} : gpu::plan_seed(p.m, p.n, p.dim, p.topk, plan.chunks(), s.seed);
}

// The seed's candidate buffers (detail/seed/seed_collect.hpp) on `info`, scored where the values' range is known.
gpu::CollectPlan collect_plan(const knn::Problem& p, const gpu::EngineSettings& s, const gpu::SeedPlan& seed,
                              const knn::DeviceInfo& info) {
  gpu::CollectPlan c =
      gpu::plan_collect(p.m, p.n, p.dim, p.topk, seed.chosen, info.sm_count, s.collect, s.collect_queries, s.collect_balance);
  if (c.chosen) gpu::plan_collect_scoring(p, c, info.sm_count, info.cc_major, s.collect_scores, s.collect_tc, s.tc_split);
  return c;
}

// Partial lists go through the merge unless each query has exactly one (written in place) or topk = 1 (atomicMin).
bool needs_merge(const gpu::ScanPlan& plan, List l) { return l != List::one && plan.partials() > 1; }

std::size_t heap_slots(const gpu::ScanPlan& plan, List l, int topk) {
  return l == List::heap ? std::size_t(plan.blocks_per_chunk()) * gpu::kScanBlock * topk : 0;
}

void v15_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  if (ctx.env.devices.empty()) throw std::runtime_error("v15: no CUDA device selected");
  if (p.self_join && p.m != p.n) throw std::invalid_argument(fmt::format("v15: a self-join needs m == n (m = {}, n = {})", p.m, p.n));
  const knn::DeviceInfo& info = ctx.env.devices[0];
  ctx.devices_used = {info.ordinal};
  if (p.m < 1 || p.n < 1) return;
  cuda::DeviceScope scope(info.ordinal);
  const gpu::EngineSettings s = gpu::settings_from(ctx.env.params);
  const gpu::Int8Plan int8 = gpu::plan_int8(p, s.int8, s.int8_chunks, s.int8_ramp);
  note(ctx, "int8", s.int8, int8.chosen);
  if (int8.chosen) return gpu::int8_search(p, int8, out, ctx);
  const gpu::TilePlan tile = gpu::plan_tile(p, s.tc, s.tc_tile, info.cc_major, info.sm_count, s.tile_splits, s.ramp, s.tile_waves);
  note(ctx, "tc_tile", s.tc_tile, tile.chosen);
  if (tile.chosen) return gpu::tile_search(p, tile, out, ctx);
  const gpu::GridPlan grid = gpu::plan_grid(p, s.grid);
  note(ctx, "grid", s.grid, grid.chosen);
  if (grid.chosen) return gpu::grid_search(p, grid, out, ctx);
  const List list = list_for(p.topk);
  const Kernel tc_kernel = pick_filter(p.dim, s.tc_split);
  const int tc_per_sm =
      tc_kernel == nullptr ? 0
                           : cuda::resident_blocks_per_sm(info.ordinal, reinterpret_cast<const void*>(tc_kernel), gpu::kTcBlock);
  const bool first = buffers_first(p, s);
  const gpu::TcPlan tc = first ? gpu::TcPlan{} : gpu::plan_tc(p, s.tc, info.cc_major, (long long)std::max(1, tc_per_sm) * info.sm_count,
                                                              p.self_join, false, s.tc_split);
  // The fp32 filter is planned only where the tensor-core filter is not taken (its reason is then
  // never printed).
  const gpu::Fp32Plan f32 = tc.chosen || first ? gpu::Fp32Plan{} : gpu::plan_fp32(p, s.fp32_filter, s.fp32_queries, s.fp32_stage);
  note(ctx, "tc", s.tc, tc.chosen), note(ctx, "fp32_filter", s.fp32_filter, f32.chosen);
  if (tc.chosen) note(ctx, "tc_split", s.tc_split, tc.split);
  if (f32.chosen) note(ctx, "fp32_stage", s.fp32_stage, f32.stage);
  const bool filter = tc.chosen || f32.chosen;
  const Kernel scan_kernel =
      !f32.chosen ? gpu::scan::pick_kernel(p.dim, list) : f32.queries_per_thread == 4 ? gpu::f32::pick<4>(p.dim, f32.stage) : gpu::f32::pick<8>(p.dim, f32.stage);
  const int per_sm =
      cuda::resident_blocks_per_sm(info.ordinal, reinterpret_cast<const void*>(scan_kernel), gpu::kScanBlock);
  const gpu::ScanPlan plan =
      plan_for(p, s, (long long)std::max(1, per_sm) * info.sm_count, info.sm_count, f32.chosen ? f32.queries_per_thread : 0, first);
  const Kernel kernel = tc.chosen ? tc_kernel : scan_kernel;
  const gpu::SeedPlan seed = seed_plan(p, s, plan, filter);
  const gpu::CollectPlan collect = collect_plan(p, s, seed, info);
  note(ctx, "seed", s.seed, seed.chosen), note(ctx, "collect", s.collect, collect.chosen);
  if (collect.chosen && s.collect_queries == 0) ctx.chosen["collect_queries"] = std::to_string(collect.queries_per_thread);
  const long long partials = filter || collect.chosen ? 1 : plan.partials();
  const bool merge = !filter && !collect.chosen && needs_merge(plan, list);
  const std::vector<int>& chunk_rows = tc.chosen ? tc.chunk_rows : plan.chunk_rows;
  const int blocks = tc.chosen ? tc.blocks_per_chunk() : plan.blocks_per_chunk();
  const int block_threads = tc.chosen ? gpu::kTcBlock : gpu::kScanBlock;

  // The copy stream uploads, merges and downloads; the search stream runs the chunk kernels. With
  // one chunk nothing overlaps (the search waits for the whole copy), and v15.one_stream runs the
  // search on the copy stream: no waits between two streams, but the keys' fill no longer overlaps
  // the copy (docs/v15.md has both effects measured).
  const bool one_stream = s.one_stream && chunk_rows.size() == 2;
  cuda::Stream copy, second;
  const cudaStream_t search = one_stream ? copy.get() : second.get();
  const std::size_t partial_slots = merge ? std::size_t(p.m) * partials * p.topk : 0;
  const std::size_t key_slots = filter ? std::size_t(p.m) * p.topk : list == List::one ? p.m : 0;
  const bool host_keys = !filter && !collect.chosen && list == List::one && gpu::host_keys_taken(p.m, p.reference_floats() * sizeof(float), s.host_keys);
  note(ctx, "host_keys", s.host_keys, host_keys);
  cuda::PinnedStaging<unsigned long long> staged(host_keys ? p.m : 0);
  float *references = nullptr, *own_queries = nullptr, *distances = nullptr, *partial_distances = nullptr, *heap_distances = nullptr;
  std::int32_t *indices = nullptr, *partial_indices = nullptr, *heap_indices = nullptr;
  unsigned long long *best = nullptr, *candidates = nullptr;
  const std::size_t answers = host_keys ? 0 : p.result_slots(), heap = heap_slots(plan, list, p.topk);
  const cuda::StreamSlab slab(copy, {cuda::slab_part(references, padded_rows(p.n) * p.dim),
                                     cuda::slab_part(own_queries, p.self_join ? 0 : p.query_floats()),
                                     cuda::slab_part(indices, answers), cuda::slab_part(distances, answers),
                                     cuda::slab_part(partial_distances, partial_slots), cuda::slab_part(partial_indices, partial_slots),
                                     cuda::slab_part(best, key_slots), cuda::slab_part(heap_distances, heap),
                                     cuda::slab_part(heap_indices, heap), cuda::slab_part(candidates, filter ? 1 : 0)});
  std::optional<gpu::ScanSeed> seeder;
  if (seed.chosen) seeder.emplace(p.m, p.n, p.dim, p.self_join, copy);
  std::optional<gpu::SeedCollect> collector;
  if (collect.chosen) collector.emplace(collect, p.m, p.n, p.dim, p.topk, info.sm_count, copy);
  std::unique_ptr<gpu::PartialMerge> merger;
  if (merge || (filter && p.topk > 1))  // the filters' lists: their keys sorted per query
    merger = std::make_unique<gpu::PartialMerge>(p.m, (merge ? partials : 1) * p.topk, p.topk, copy, merge, s.merge_runs);

  // On an exception, the search's kernels end before the buffers are freed, the keys' download before `staged` is.
  const cuda::JoinOnUnwind join(search), join_copy(copy);
  gpu::scan::Args a{};
  a.queries = p.self_join ? references : own_queries;
  a.references = references;
  a.dim = p.dim, a.m = p.m, a.topk = p.topk, a.self_join = p.self_join;
  a.splits = tc.chosen ? tc.splits : plan.splits;
  a.query_threads = plan.query_threads, a.ref_threads = plan.ref_threads;
  a.tc_center = tc.chosen ? tc.center : f32.center, a.tc_band = tc.chosen ? tc.band : f32.band;
  a.tc_candidates = candidates;
  const std::size_t dynamic_shared = tc.chosen ? shared_list_bytes(tc, p.topk, kernel, info.ordinal, s.shared_lists) : 0;
  a.tc_shared_lists = dynamic_shared > 0;
  if (dynamic_shared > 0)
    KNN_CUDA_TRY(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(dynamic_shared)));
  a.partials = partials;
  a.partial_distances = merge ? partial_distances : distances;
  a.partial_indices = merge ? partial_indices : indices;
  a.best = best;
  a.heap_distances = heap_distances, a.heap_indices = heap_indices;
  a.query_order = seeder ? seeder->order() : nullptr, a.query_bound = seeder ? seeder->bound() : nullptr;

  const int chunks = int(chunk_rows.size()) - 1;
  cuda::Event start, searched, merged, done;
  cuda::Event search_start;
  std::vector<cuda::Event> copied(chunks);
  start.record(copy);
  // The keys and the count are set on the search stream while the copy stream uploads (after `start`).
  KNN_CUDA_TRY(cudaStreamWaitEvent(search, start.get(), 0));
  if (key_slots > 0) gpu::fill_worst_keys(best, (long long)key_slots, search);
  if (filter) KNN_CUDA_TRY(cudaMemsetAsync(candidates, 0, sizeof(unsigned long long), search));
  if (!p.self_join)
    KNN_CUDA_TRY(cudaMemcpyAsync(own_queries, p.queries, p.query_floats() * sizeof(float),
                                 cudaMemcpyHostToDevice, copy));
  for (int c = 0; c < chunks; ++c) {
    const std::size_t first = std::size_t(chunk_rows[c]) * p.dim;
    const std::size_t floats = std::size_t(chunk_rows[c + 1] - chunk_rows[c]) * p.dim;
    KNN_CUDA_TRY(cudaMemcpyAsync(references + first, p.references + first, floats * sizeof(float),
                                 cudaMemcpyHostToDevice, copy));
    copied[c].record(copy);
  }
  for (int c = 0; c < chunks; ++c) {
    KNN_CUDA_TRY(cudaStreamWaitEvent(search, copied[c].get(), 0));
    if (c == 0) search_start.record(search);
    a.row_begin = chunk_rows[c], a.row_end = chunk_rows[c + 1];
    if (c == 0 && seeder) seeder->enqueue(a.queries, a.references, p.topk, seed.window, search);
    if (c == 0 && filter) {  // the seed rows come from the first chunk
      const long long threads = (long long)p.m * 32;
      gpu::tc::seed_kernel<><<<int((threads + gpu::tc::kSeedBlock - 1) / gpu::tc::kSeedBlock), gpu::tc::kSeedBlock, 0,
                             search>>>(a);
      KNN_CUDA_CHECK_LAUNCH();
    }
    a.partial_base = (long long)c * plan.splits * plan.ref_threads;
    if (collector) {
      collector->enqueue(a.queries, a.references, p.dim, p.n, p.self_join, seeder->order(), seeder->bound(),
                         indices, distances, search);
      continue;
    }
    kernel<<<blocks, block_threads, dynamic_shared, search>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
  }
  searched.record(search);
  KNN_CUDA_TRY(cudaStreamWaitEvent(copy, searched.get(), 0));
  if (merge)
    merger->enqueue(partial_distances, partial_indices, indices, distances);
  else if (merger) merger->enqueue_keys(best, indices, distances);
  else if (key_slots > 0 && !host_keys)
    gpu::unpack_best(best, p.m, indices, distances, copy);
  merged.record(copy);
  if (host_keys)
    KNN_CUDA_TRY(cudaMemcpyAsync(staged.data(), best, p.m * sizeof(unsigned long long), cudaMemcpyDeviceToHost, copy));
  else
    cuda::download_answers(p, indices, distances, out, copy);
  done.record(copy);
  // The filters' candidate count and the buffers' counts, after the last timed event (no part of the answer).
  unsigned long long exact_count = 0;
  if (filter)
    KNN_CUDA_TRY(cudaMemcpyAsync(&exact_count, candidates, sizeof exact_count, cudaMemcpyDeviceToHost, copy));
  if (collector) collector->download_counts(copy);
  copy.synchronize();
  if (host_keys) gpu::unpack_best_on_host(staged.data(), p.m, out.indices, out.distances);  // timed with the call

  gpu::report_chunk_phases(ctx.timing, start, copied[chunks - 1], search_start, searched, merged, done);
  if (tc.chosen) {
    ctx.path = fmt::format(
        "tensor-core filter: k={} in {} {} slice{} of 8, scores ||r-c||^2 - 2(q-c).(r-c) with c = {:g}, error bound "
        "{:.3g} (values within {:g} of c); {} exact fp32 distances for candidates ({:.1f} per query, {:.4f} % of the "
        "pairs; {} seed distances per query besides); blocks of {} = {} warps x {} queries scoring {} rows at a time from shared memory, {} query group{} x {} split{} x {}; "
        "{}",
        p.dim, tc.slices, tc.split ? "split-TF32 (hi + lo, 3 products)" : "TF32", tc.slices == 1 ? "" : "s", tc.center, tc.band, tc.half_span, exact_count,
        double(exact_count) / p.m, 100.0 * double(exact_count) / (double(p.m) * p.n), gpu::tc::kSeedRows, gpu::kTcBlock, gpu::kTcWarps,
        gpu::kTcWarpQueries, gpu::kTcStageRows, tc.query_groups, tc.query_groups == 1 ? "" : "s", tc.splits, tc.splits == 1 ? "" : "s",
        gpu::chunks_text(chunk_rows, p.dim, s.ramp, one_stream), gpu::filter_lists_text(p.topk) + (a.tc_shared_lists ? " (in shared memory during each chunk)" : ""));
    return;
  }
  if (f32.chosen) {
    ctx.path = fmt::format(
        "fp32 filter: k={} compiled in, {} queries per thread, rows {}, scores ||r-c||^2 - 2(q-c).(r-c) in fp32 with c = {:g}, "
        "error bound {:.3g} (values within {:g} of c); {} exact fp32 distances in 4-row groups holding a candidate ({:.1f} per query, "
        "{:.4f} % of the pairs; {} seed distances per query besides); blocks of {} = {} query x {} row threads, {} "
        "query group{} x {} split{} x {}; {}; tensor-core filter not taken: {}; query grid not taken: {}",
        p.dim, f32.queries_per_thread, f32.stage ? "staged in shared memory, centred, with norms" : "centred by each thread",
        f32.center, f32.band, f32.half_span, exact_count, double(exact_count) / p.m,
        100.0 * double(exact_count) / (double(p.m) * p.n), gpu::tc::kSeedRows, gpu::kScanBlock, plan.query_threads,
        plan.ref_threads, plan.query_groups, plan.query_groups == 1 ? "" : "s", plan.splits,
        plan.splits == 1 ? "" : "s", gpu::chunks_text(chunk_rows, p.dim, s.ramp, one_stream), gpu::filter_lists_text(p.topk), tc.why, grid.why);
    return;
  }
  if (collector) {
    ctx.path = collector->path(p.dim) + fmt::format("; seeded: each query's bound from the {} rows around it in Morton order", seed.window);
    return;
  }
  // Formatted after the call (RunContext::path_later; scan_path.hpp).
  gpu::ScanPathFacts f{p.dim, compiled_dim(p.dim), list_name(list), plan, s.ramp, partials,
                       list == List::one ? std::string(" merged by atomicMin") + (host_keys ? ", unpacked on the host" : "")
                       : merge ? " merged by " + merger->describe() + (s.merge_runs ? "" : " (merge_runs=off)")
                               : std::string(" written in place"),
                       one_stream, seed.chosen, seed.window, seed.why, collect.why, p.values.known,
                       p.topk <= gpu::kFilterMaxTopk, int8.why, tc.why, f32.why, grid.why};
  ctx.path_later = [f = std::move(f)] { return gpu::scan_path_text(f); };
}

std::size_t v15_device_bytes(const knn::Problem& p, const knn::Environment& env) {
  const gpu::EngineSettings s = gpu::settings_from(env.params);
  const gpu::Int8Plan int8 = gpu::plan_int8(p, s.int8, s.int8_chunks, s.int8_ramp);
  if (int8.chosen) return gpu::int8_device_bytes(p, int8);
  const knn::DeviceInfo d = env.devices.empty() ? knn::DeviceInfo{} : env.devices[0];
  if (const gpu::TilePlan t = gpu::plan_tile(p, s.tc, s.tc_tile, d.cc_major, d.sm_count, s.tile_splits, s.ramp, s.tile_waves); t.chosen)
    return gpu::tile_device_bytes(p, t);
  if (const gpu::GridPlan g = gpu::plan_grid(p, s.grid); g.chosen) return gpu::grid_device_bytes(p, g);
  const List list = list_for(p.topk);
  const bool first = buffers_first(p, s);
  const gpu::ScanPlan plan = plan_for(p, s, (long long)kMaxBlocksPerSm * std::max(1, d.sm_count), std::max(1, d.sm_count), 0, first);
  std::size_t bytes = padded_rows(p.n) * p.dim * sizeof(float) + (p.self_join ? 0 : p.query_floats() * sizeof(float)) +
                      p.result_slots() * (sizeof(std::int32_t) + sizeof(float));
  bytes += heap_slots(plan, list, p.topk) * (sizeof(std::int32_t) + sizeof(float));
  // The filters' keys (both filters' plans depend on the parameters, the values and the device's compute capability).
  const gpu::TcPlan tc =
      first ? gpu::TcPlan{} : gpu::plan_tc(p, s.tc, env.devices.empty() ? 0 : env.devices[0].cc_major, 1, p.self_join, false, s.tc_split);
  const bool filter = !first && (tc.chosen || gpu::plan_fp32(p, s.fp32_filter, s.fp32_queries, s.fp32_stage).chosen);
  if (filter && p.topk > 1)
    bytes += std::size_t(p.m) * p.topk * sizeof(unsigned long long) + gpu::PartialMerge::device_bytes(p.m, p.topk) + 8;
  else if (list == List::one || filter)
    bytes += std::size_t(p.m) * sizeof(unsigned long long) + sizeof(unsigned long long);
  const gpu::SeedPlan seed = seed_plan(p, s, plan, filter);
  if (seed.chosen) bytes += gpu::ScanSeed::device_bytes(p.m, p.n, p.dim, p.self_join);
  // The candidate buffers at their largest (every split the budget allows).
  if (const gpu::CollectPlan c = gpu::plan_collect(p.m, p.n, p.dim, p.topk, seed.chosen, 1 << 20, s.collect); c.chosen)
    return bytes + gpu::SeedCollect::device_bytes(c, p.m, p.n);
  if (!filter && needs_merge(plan, list)) {
    const long long per_query = plan.partials() * p.topk;
    bytes += std::size_t(p.m) * per_query * (sizeof(std::int32_t) + sizeof(float));
    bytes += gpu::PartialMerge::device_bytes(p.m, per_query);
  }
  return bytes;
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v15";
  d.title = "GPU fused distance + top-k (register or heap lists), references copied in chunks under the search";
  d.family = knn::Family::gpu;
  d.gpus = knn::GpuNeed::one;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (env.devices.empty()) return std::string("no CUDA device");
    if (p.dim < 1) return fmt::format("k = {}: needs at least one dimension", p.dim);
    if (p.topk < 1) return fmt::format("topk {} is not a neighbour count", p.topk);
    if (p.topk > kMaxTopk)
      return fmt::format("topk {} over v15's limit of {} (a heap of topk pairs per thread in global scratch)", p.topk,
                         kMaxTopk);
    if (p.self_join && p.m != p.n) return fmt::format("a self-join needs m == n (m = {}, n = {})", p.m, p.n);
    return std::nullopt;
  };
  d.device_bytes = v15_device_bytes;
  d.make = knn::query_only(v15_query);
  d.params = gpu::engine_params();
  return d;
}

}  // namespace

void knn::gpu::fused_topk_search(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) { v15_query(p, out, ctx); }

KNN_REGISTER_VERSION(describe());
