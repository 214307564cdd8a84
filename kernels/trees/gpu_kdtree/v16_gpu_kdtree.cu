// v16: seed 004's data-parallel kd-tree, built and searched entirely on the GPU. The build
// (kdtree_gpu_build.cu, kdtree_gpu_build_lists.cu) pads the references to a power of two of equal leaves
// (kd_leaves.hpp) and splits every node of a level at once at the median of its widest dimension,
// keeping node boxes, split dimensions and split values, while the queries are copied up on a second
// stream. The search runs in waves (kdtree_gpu_waves.cuh): every query starts at its natural leaf;
// each wave orders the active (leaf, query) keys by leaf (a CUB radix sort of the leaf bits, or below
// 2^18 keys a counting pass, kdtree_gpu_keysort.cu), and
// each thread scans its query's leaf into a top-k heap in shared memory (full (distance, index)
// rule), then walks the implicit tree without a stack (a subtree is skipped when its box, or its
// splitting plane, is farther than the query's K-th distance) to its next leaf. Heaps wait in the
// answer rows between waves. The final steps (seed 004's last two): finished queries sort to the end,
// and once few queries remain one kernel runs each of them to the end. Each wave's count of remaining
// queries is read one wave late (readback=lag). The answers reach the output by a copy after the
// search, by the heap kernel's writes into a pinned output (direct), or by one copy under the later
// waves with the rows still active then written again after the search (early). Parameters: v16_params.hpp
// and docs/v16.md. Distances use v0's roundings, so rows equal v0's, ties included.
#include <cuda_runtime.h>

#include <cub/cub.cuh>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/cuda/runtime.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_keysort.hpp"
#include "kernels/trees/gpu_kdtree/kd_tc_plan.hpp"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_launch.cuh"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_waves.cuh"
#include "kernels/trees/gpu_kdtree/kdtree_gpu_walk.cuh"
#include "kernels/device/shared_topk.cuh"
#include "kernels/device/topk_supports.hpp"
#include "kernels/trees/gpu_kdtree/v16_params.hpp"
#include "kernels/trees/gpu_kdtree/wave_trace.hpp"

namespace {

namespace cuda = knn::cuda;
namespace kd = knn::kd;
using kd::compiled_dim, kd::dispatch, kd::lanes_for, kd::search_shared, kd::staged_stride;
using Options = knn::gpu::V16Options;

constexpr int kBlock = kd::kWaveBlock;
constexpr int kMaxTopk = 64;   // heaps of 128 threads x 64 pairs fill 64 KiB of shared memory
constexpr int kMaxDim = 128;   // stated limit: a staged leaf row and the box test loop over k

// v16.tc's 8-row groups where it is wanted (the heap kernel assumed unless topk 1's pair in registers may run).
int tc_multiple(const knn::Problem& p, const Options& o) {
  return kd::tc_leaf_multiple(o.tc, p, !(o.nearest && p.topk == 1 && !p.self_join), compiled_dim(p.dim));
}
kd::LeafPlan leaf_plan(const knn::Problem& p, const Options& o) {  // v16.leaf's minimum, rounded as tc_multiple says
  return kd::plan_leaves(p.n, kd::leaf_for(o.min_leaf, p.topk), tc_multiple(p, o));
}

int stage_leaves_for(const Options& o, const kd::LeafPlan& plan, int dim) {
  if (!o.sort) return 0;  // unsorted blocks hold as many leaves as queries: read them from global memory
  const std::size_t leaf_bytes = std::size_t(plan.leaf_size) * (staged_stride(dim) + 1) * 4;
  return int(std::min<std::size_t>(kBlock, std::size_t(o.stage_kib) * 1024 / leaf_bytes));
}

std::optional<std::string> limits(const knn::Problem& p, const knn::ParamValues& params, std::size_t optin) {
  if (p.topk > kMaxTopk) return fmt::format("topk {} over v16's limit of {} (heaps of {} threads in shared memory)", p.topk, kMaxTopk, kBlock);
  if (p.dim > kMaxDim) return fmt::format("k = {} over v16's limit of {}", p.dim, kMaxDim);
  if (p.m < 1 || p.n < 1) return fmt::format("m = {}, n = {}: a kd-tree needs at least one point", p.m, p.n);
  const Options o = knn::gpu::v16_options(params);
  const kd::LeafPlan plan = leaf_plan(p, o);
  const std::size_t need = search_shared(p.topk, stage_leaves_for(o, plan, p.dim), int(plan.leaf_size), p.dim, knn::gpu::v16_first_batch(o.first_batch, p.topk));
  if (need > optin) return fmt::format("topk {} needs {} bytes of shared memory per block; the device allows {}", p.topk, need, optin);
  if (o.build == "lists" && !kd::lists_fit(p.dim, plan.padded()))
    return fmt::format("build=lists: {} dimensions x {} padded rows reach 2^31 list entries (build=sort has no such limit)", p.dim, plan.padded());
  return std::nullopt;
}

void v16_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  if (ctx.env.devices.empty()) throw std::runtime_error("v16: no CUDA device selected");
  if (auto reason = limits(p, ctx.env.params, ctx.env.devices[0].shared_per_block_optin))
    throw std::invalid_argument("v16: " + *reason);
  const Options o = knn::gpu::v16_options(ctx.env.params);
  const int min_leaf = kd::leaf_for(o.min_leaf, p.topk);
  const kd::LeafPlan plan = leaf_plan(p, o);
  const int device = ctx.env.devices[0].ordinal;
  ctx.devices_used = {device};
  cuda::DeviceScope scope(device);
  cuda::Stream stream;  // first: the buffers below are freed on it before it goes back
  cuda::StreamBuffer<float> references(p.reference_floats(), stream);
  cuda::StreamBuffer<float> own_queries(p.self_join ? 0 : p.query_floats(), stream);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), stream);
  cuda::StreamBuffer<float> distances(p.result_slots(), stream);
  cuda::StreamBuffer<std::uint64_t> keys[2] = {{std::size_t(p.m), stream}, {std::size_t(p.m), stream}};
  constexpr int kSlots = 4;  // waves whose counts of remaining queries may be in flight at once (readback=lag)
  cuda::StreamBuffer<unsigned> remaining(kSlots, stream);
  cuda::StreamBuffer<unsigned long long> visits(3, stream);  // leaves visited; those scanned on the tensor cores, and the warps' scans (v16.tc)
  cuda::StreamBuffer<int> selected(1, stream);  // DeviceSelect's count (the kernel counts too)
  cuda::StreamBuffer<unsigned> claimed(1, stream);  // v16.tail_queue's counter
  cuda::PinnedStaging<unsigned> remaining_host(kSlots);
  cuda::Event counted[kSlots];
  cuda::PinnedStaging<unsigned long long> visits_host(3);
  std::size_t sort_bytes = 0, select_bytes = 0;
  {
    cub::DoubleBuffer<std::uint64_t> k(keys[0].data(), keys[1].data());
    KNN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, k, p.m, 32, 64, stream));
    KNN_CUDA_TRY(cub::DeviceSelect::If(nullptr, select_bytes, keys[0].data(), keys[1].data(), selected.data(), p.m,
                                       kd::StillActive{unsigned(plan.leaves)}, stream));
  }
  const int bins = int(plan.leaves) + 1;  // the leaves and the finished keys' value
  const bool counting = o.key_sort != "radix";  // key_sort=count, or auto (count below kV16CountSortMaxKeys keys)
  cuda::StreamBuffer<unsigned> leaf_counts(counting ? bins : 0, stream), leaf_next(counting ? bins : 0, stream);
  if (counting) sort_bytes = std::max(sort_bytes, kd::count_sort_temp_bytes(bins));
  cuda::StreamBuffer<unsigned char> temp(std::max<std::size_t>({sort_bytes, select_bytes, 1}), stream);
  const bool lag = o.lag && o.sort && o.final_steps;  // readback=lag in effect (sort and final steps on)
  // answers=early: the keys of the queries still active when the bulk copy starts (their rows are written again after it)
  const long long answer_bytes = (long long)p.result_slots() * 8;
  const bool early_wanted = lag && knn::gpu::v16_early_wanted(o.answers, p.topk, answer_bytes);
  const bool direct_wanted = knn::gpu::v16_direct_wanted(o.answers, p.topk);  // the rules never want both
  // The output's device addresses, where it is pinned memory the device can address and one of them wants it.
  void* mapped_i = early_wanted || direct_wanted ? cuda::mapped_address(out.indices) : nullptr;
  void* mapped_d = mapped_i != nullptr ? cuda::mapped_address(out.distances) : nullptr;
  const bool pinned_out = early_wanted && mapped_i != nullptr && mapped_d != nullptr;
  cuda::StreamBuffer<std::uint64_t> held(pinned_out ? std::size_t(p.m) : 0, stream);
  // The queries go up on their own stream while the tree is built (declared after the buffers: on an
  // exception it is waited for before they are freed).
  cuda::Stream query_copy;
  const cuda::JoinOnUnwind join_copy(query_copy);
  cuda::Event references_in, queries_in;
  cuda::PhaseTimer timer(stream);
  timer.begin("h2d");
  KNN_CUDA_TRY(cudaMemcpyAsync(references.data(), p.references, p.reference_floats() * sizeof(float), cudaMemcpyHostToDevice, stream));
  KNN_CUDA_TRY(cudaMemsetAsync(visits.data(), 0, 3 * sizeof(unsigned long long), stream));
  const bool overlap = o.overlap && !p.self_join;
  if (!p.self_join) {
    references_in.record(stream);  // the buffers are allocated, and the copy engine is free
    KNN_CUDA_TRY(cudaStreamWaitEvent(query_copy, references_in.get()));
    const cudaStream_t on = overlap ? query_copy.get() : stream.get();
    KNN_CUDA_TRY(cudaMemcpyAsync(own_queries.data(), p.queries, p.query_floats() * sizeof(float), cudaMemcpyHostToDevice, on));
    queries_in.record(on);
  }
  timer.end();
  timer.begin("build_tree");
  const bool lists = kd::build_from_lists(o.build, p.dim, plan.padded());
  const kd::DeviceKdTree tree = lists ? kd::build_device_lists(references.data(), plan, p.dim, stream)
                                      : kd::build_device(references.data(), plan, p.dim, o.segment_rows, stream);
  timer.end();
  const float* queries = p.self_join ? references.data() : own_queries.data();
  const kd::TreeView view = kd::view_of(tree);
  const int stage = stage_leaves_for(o, plan, p.dim);
  const bool nearest = o.nearest && p.topk == 1 && !p.self_join && stage == 0;
  const kd::TcLeafPlan tc = kd::plan_tc_leaves(p, o.tc, ctx.env.devices[0].cc_major, view.leaf_size, compiled_dim(p.dim), !nearest);
  cuda::StreamBuffer<uint2> tc_rows(tc.on ? kd::tc_row_records(view) : 0, stream);  // v16.tc: the rows as fp16 fragments (phase tc_pack)
  if (tc.on) timer.begin("tc_pack"), kd::pack_tc_rows(view, tc.center, tc.scale, tc_rows.data(), stream), timer.end();
  // answers=direct: the heap kernel writes finished rows into the pinned output, so the answers' copy
  // runs during the waves (phase search_d2h is both); the register kernel's rows of 8 bytes stay copied.
  void* host_i = direct_wanted && !nearest ? mapped_i : nullptr;
  void* host_d = direct_wanted && !nearest ? mapped_d : nullptr;
  const bool direct = host_i != nullptr && host_d != nullptr;
  const char* search_phase = direct ? "search_d2h" : "search";
  // answers=early (readback=lag, a pinned output): one copy of every row starts on the second stream after the first wave
  // that leaves at most early_pct percent of the queries active, and runs under the later waves; meanwhile each wave's count
  // is stored into pinned memory by a kernel, not by the busy copy engine. Rows of the queries that wave ran may still
  // change: their keys are kept (`held`), and those rows are written again once the copy and the search are both done.
  auto* counts_mapped = held.size() > 0 ? static_cast<unsigned*>(cuda::mapped_address(remaining_host.data())) : nullptr;
  void* early_i = held.size() > 0 ? mapped_i : nullptr;
  void* early_d = held.size() > 0 ? mapped_d : nullptr;
  const bool early = early_i != nullptr && early_d != nullptr && counts_mapped != nullptr;
  const long long early_limit = knn::gpu::v16_early_limit(p.m, o.early_pct);
  int cut_wave = -1, held_count = 0;  // the wave (from 1) after which the copy started, and the rows written again
  cuda::Event cut, copied, first_counted;  // first_counted: the first wave's count read back (answers=auto's time rule)
  int checked_wave = -1;                   // answers=auto: where the waves so far were too short to hide the copy
  float waited_ms = 0.f;
  timer.begin(search_phase);
  if (!p.self_join) KNN_CUDA_TRY(cudaStreamWaitEvent(stream, queries_in.get()));
  kd::natural_leaf_kernel<<<(p.m + 255) / 256, 256, 0, stream>>>(view, queries, p.m, keys[0].data());
  KNN_CUDA_CHECK_LAUNCH();
  timer.end();

  const int leaf_bits = plan.levels + 1;  // leaves + 1 sentinel values
  int per_sm = 0;
  KNN_CUDA_TRY(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  const long long resident = (long long)per_sm * std::max(ctx.env.devices[0].sm_count, 1);
  std::vector<int> wave_lanes;  // per wave, the kernel's lanes per query
  const int first_batch = knn::gpu::v16_first_batch(o.first_batch, p.topk);
  bool first_batched = false;  // the first wave's insertions held back (first_batch)
  // keys[cur] holds `items` keys, the `count` active ones first unless finished ones sit among them.
  int cur = 0, items = p.m, count = p.m, sorted_waves = 0, count_sorts = 0, key_sorts = 0;
  std::vector<int> active;
  const long long split = (long long)plan.leaves * o.tail;  // the last kernel below this many active queries
  const auto partition = [&] {  // the finished queries out, order kept
    timer.begin("query_sort");
    std::size_t bytes = temp.size();
    KNN_CUDA_TRY(cub::DeviceSelect::If(temp.data(), bytes, keys[cur].data(), keys[1 - cur].data(), selected.data(),
                                       items, kd::StillActive{unsigned(plan.leaves)}, stream));
    cur = 1 - cur;
    items = count;
    timer.end();
  };
  const auto sort_keys = [&] {  // finished keys (leaf = leaves) sort to the end
    timer.begin("query_sort");
    ++key_sorts;
    if (knn::gpu::v16_count_sort(o.key_sort, items)) {
      ++count_sorts;
      kd::count_sort_keys(keys[cur].data(), keys[1 - cur].data(), items, bins, leaf_counts.data(), leaf_next.data(), temp.data(), temp.size(), stream);
      cur = 1 - cur;
    } else {
      cub::DoubleBuffer<std::uint64_t> k(keys[cur].data(), keys[1 - cur].data());
      std::size_t bytes = temp.size();
      KNN_CUDA_TRY(cub::DeviceRadixSort::SortKeys(temp.data(), bytes, k, items, 32, 32 + leaf_bits, stream));
      cur = k.Current() == keys[0].data() ? 0 : 1;
    }
    timer.end();
  };
  // One launch of wave `w` over `grid` keys; its count of remaining queries goes to slot w % kSlots.
  // The heap kernel's auto: v16.tail_lanes in the last kernel, whose queries each run a long chain of leaves
  // alone, and 1 in the sorted waves, where lanes cost more than they hide (on an H100, docs/v16.md).
  const auto launch = [&](int w, bool to_end, long long grid, const unsigned* count_in, int guard) {
    kd::SearchArgs a{view, queries, p.topk, int(grid), to_end || !o.sort ? 0 : stage, p.self_join, o.box, w == 0, to_end,
                     o.vec, keys[cur].data(), keys[1 - cur].data(), indices.data(), distances.data(), remaining.data() + w % kSlots,
                     visits.data(), static_cast<std::int32_t*>(direct ? host_i : nullptr), static_cast<float*>(direct ? host_d : nullptr),
                     count_in, guard, unsigned(std::min<long long>(split, 0xffffffffLL))};
    const int lanes = nearest ? lanes_for(o.lanes, grid, resident)
                      : a.stage_leaves > 0 ? 1
                      : o.heap_lanes > 0   ? lanes_for(o.heap_lanes, grid, resident)
                                           : lanes_for(to_end ? knn::gpu::v16_tail_lanes(o.tail_lanes, p.dim) : 1, grid, resident);
    a.batch = w == 0 && lanes == 1 && !nearest && a.stage_leaves == 0 ? first_batch : 0;
    a.claimed = o.tail_queue ? claimed.data() : nullptr;
    if (tc.on && !to_end) a.tc = kd::TcRows{tc_rows.data(), tc.center, tc.scale, tc.band, o.tc_leaves, visits.data() + 1, visits.data() + 2}, a.tc_regs64 = o.tc_regs == "64";
    if (w == 0) first_batched = a.batch > 0;
    dispatch<KNN_V16_COMPILED_DIMS, 0>(a, !nearest, lanes, stream);
    return lanes;
  };
  const auto read_back = [&](int w) {  // wave w's remaining queries to the host, and an event when there
    if (cut_wave >= 0) {
      kd::publish_count_kernel<<<1, 1, 0, stream>>>(remaining.data() + w % kSlots, counts_mapped + w % kSlots);
      KNN_CUDA_CHECK_LAUNCH();
    } else {
      KNN_CUDA_TRY(cudaMemcpyAsync(remaining_host.data() + w % kSlots, remaining.data() + w % kSlots, sizeof(unsigned),
                                   cudaMemcpyDeviceToHost, stream));
    }
    counted[w % kSlots].record(stream);
  };
  if (!(o.lag && o.sort && o.final_steps)) {
    // readback=wait (or sort or final off): the host reads each wave's count before it queues the next.
    for (int w = 0; count > 0; ++w) {
      const bool sort = o.sort && (!o.final_steps || count >= split);
      const bool to_end = o.final_steps && !sort;
      if (items > count && !sort) partition();
      if (sort) sort_keys(), items = count, ++sorted_waves;
      timer.begin(search_phase);
      KNN_CUDA_TRY(cudaMemsetAsync(remaining.data() + w % kSlots, 0, sizeof(unsigned), stream));
      wave_lanes.push_back(launch(w, to_end, count, nullptr, 0));
      read_back(w);
      timer.end();
      stream.synchronize();
      active.push_back(count);
      cur = 1 - cur;
      count = int(remaining_host.data()[w % kSlots]);
      if (to_end && count != 0) throw std::runtime_error(fmt::format("v16: {} queries unfinished after the last wave", count));
      if (count > 0 && !(o.final_steps && o.sort)) partition();
    }
  } else {
    // readback=lag: wave w is queued while wave w-1 runs. Its keys are the ones wave w-1 held (their
    // number read back from wave w-2), and its exact count stays on the device: after the first wave
    // each wave is a pair of launches on that count, a sorted wave from `split` queries, else the
    // last kernel, and the other half returns at once. The host learns which ran one wave late.
    std::vector<std::array<int, 2>> pair_lanes;  // per wave: the sorted wave's lanes, the last kernel's
    int last = -1;
    for (int w = 0; last < 0; ++w) {
      if (w >= 2) {  // wave w-1's count: the keys of wave w, and which half of wave w-1 ran
        KNN_CUDA_TRY(cudaEventSynchronize(counted[(w - 2) % kSlots].get()));
        items = int(remaining_host.data()[(w - 2) % kSlots]);
        if (items == 0) { last = w - 1; break; }  // wave w-2 finished every query: wave w-1's pair had nothing to do
        active.push_back(items);
        const bool ended = items < split;
        wave_lanes.push_back(pair_lanes[w - 1][ended ? 1 : 0]);
        sorted_waves += ended ? 0 : 1;
        if (ended) { last = w - 1; break; }
        if (early && cut_wave < 0 && checked_wave < 0 && items <= early_limit && o.answers == "auto") {
          KNN_CUDA_TRY(cudaEventElapsedTime(&waited_ms, first_counted.get(), counted[(w - 2) % kSlots].get()));
          if (waited_ms < knn::gpu::v16_early_min_ms(answer_bytes)) checked_wave = w;  // too little search to hide it: no early copy
        }
        if (early && cut_wave < 0 && checked_wave < 0 && items <= early_limit) {  // the copy starts after wave w-1, whose keys are the active ones
          KNN_CUDA_TRY(cudaMemcpyAsync(held.data(), keys[cur].data(), std::size_t(items) * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, stream));
          held_count = items;
          cut_wave = w;
          cut.record(stream);
          KNN_CUDA_TRY(cudaStreamWaitEvent(query_copy, cut.get()));
          cuda::download_answers(p, indices.data(), distances.data(), out, query_copy);
          copied.record(query_copy);
        }
      }
      const bool to_end = w == 0 && p.m < split;  // the first wave's count is m, known here
      if (w > 0 || !to_end) sort_keys();
      timer.begin(search_phase);
      KNN_CUDA_TRY(cudaMemsetAsync(remaining.data() + w % kSlots, 0, sizeof(unsigned), stream));
      const unsigned* count_in = w == 0 ? nullptr : remaining.data() + (w - 1) % kSlots;
      std::array<int, 2> lanes{0, 0};
      if (!to_end) lanes[0] = launch(w, false, items, count_in, w == 0 ? 0 : 1);
      if (w > 0 || to_end) lanes[1] = launch(w, true, w == 0 ? p.m : std::min<long long>(items, split), count_in, w == 0 ? 0 : 2);
      read_back(w);
      timer.end();
      pair_lanes.push_back(lanes);
      if (w == 0 && early && o.answers == "auto") first_counted.record(stream);
      cur = 1 - cur;
      if (w == 0) {
        active.push_back(p.m);
        wave_lanes.push_back(to_end ? lanes[1] : lanes[0]);
        sorted_waves += to_end ? 0 : 1;
        if (to_end) last = 0;
      }
    }
    if (cut_wave >= 0) {  // the copy's tail, then the rows of the held queries
      timer.begin("d2h");
      KNN_CUDA_TRY(cudaStreamWaitEvent(stream, copied.get()));
      kd::rewrite_rows_kernel<<<unsigned(((long long)held_count * p.topk + 255) / 256), 256, 0, stream>>>(
          held.data(), held_count, p.topk, indices.data(), distances.data(), static_cast<std::int32_t*>(early_i), static_cast<float*>(early_d));
      KNN_CUDA_CHECK_LAUNCH();
      timer.end();
    }
    stream.synchronize();
    if (const unsigned left = remaining_host.data()[last % kSlots]; left != 0)
      throw std::runtime_error(fmt::format("v16: {} queries unfinished after the last wave", left));
  }
  if (!direct && cut_wave < 0) {
    timer.begin("d2h");
    cuda::download_answers(p, indices.data(), distances.data(), out, stream);
    timer.end();
  }
  KNN_CUDA_TRY(cudaMemcpyAsync(visits_host.data(), visits.data(), 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost, stream));
  stream.synchronize();
  timer.report(ctx.timing);
  const std::string build_sorts = kd::build_text(lists, o.build, p.dim, plan, o.segment_rows);
  const std::string lanes_trace = kd::lanes_trace(wave_lanes);
  const knn::gpu::V16AnswersRun run{o.answers, p.topk, o.early_pct, answer_bytes, direct, nearest, lag, early, early_limit, cut_wave, held_count,
                                    checked_wave, waited_ms};
  if (o.min_leaf == 0) ctx.chosen["leaf"] = std::to_string(min_leaf);  // auto: by topk
  if ((nearest ? o.lanes : o.heap_lanes) == 0) ctx.chosen[nearest ? "lanes" : "heap_lanes"] = lanes_trace;  // auto: by each wave's size
  if (!nearest && o.heap_lanes == 0 && o.tail_lanes == 0) ctx.chosen["tail_lanes"] = std::to_string(knn::gpu::v16_tail_lanes(0, p.dim));
  if (o.tc == "auto") ctx.chosen["tc"] = tc.on ? "on" : "off";
  ctx.path = fmt::format(
      "{}, {} leaves x {} rows ({} padding, minimum leaf {}){}{}, {} test, {}, final steps {}, rows read {}{}; waves {} ({} sorted), "
      "leaves per query {:.2f}; {}; {}; {}; active per wave (wave:queries): {}",
      compiled_dim(p.dim) ? fmt::format("k={} compiled in", p.dim) : std::string("k at run time"), plan.leaves,
      plan.leaf_size, plan.padding(), min_leaf, build_sorts,
      p.self_join ? "" : overlap ? ", the queries copied during the build" : ", the queries copied before the build (overlap=off)",
      o.box ? "box" : "median",
      o.sort ? fmt::format("sorted by leaf ({} of {} key sorts by a counting pass, the others by a radix sort of the leaf bits, key_sort={}; "
                           "up to {} leaves staged per block)",
                           count_sorts, key_sorts, o.key_sort == "auto" ? fmt::format("auto: count below {} keys", knn::gpu::kV16CountSortMaxKeys) : o.key_sort,
                           stage)
             : std::string("unsorted"),
      o.final_steps ? fmt::format("on (the last kernel below {} active queries, {}; {})", split,
                                  o.tail_queue ? "at 32 lanes a query its warps taking queries from a counter (tail_queue=on)" : "tail_queue=off",
                                  o.lag && o.sort ? "each wave's count read one wave late, the sorted wave and the last kernel queued as a pair"
                                                  : "each wave's count waited for")
                    : "off",
      o.vec == 1 && compiled_dim(p.dim) ? "as float4 groups from aligned leaves" : "one float at a time",
      o.source.empty() ? std::string() : " (" + o.source.substr(1) + ")", active.size(),
      sorted_waves, double(*visits_host.data()) / p.m,
      fmt::format("{}, lanes per query per wave: {}", nearest ? "nearest pair in registers" : kd::heaps_text(first_batch, first_batched, o.first_batch < 0), lanes_trace),
      kd::tc_leaves_text(tc, tc.on ? o.tc + ", tc_regs=" + o.tc_regs : o.tc, o.tc_leaves, visits_host.data()[1], visits_host.data()[2], *visits_host.data()), knn::gpu::v16_answers_text(run),
      kd::active_trace(active));
}

std::size_t v16_device_bytes(const knn::Problem& p, const knn::Environment& env) {
  if (p.n < 1 || p.m < 1 || p.dim < 1) return 0;
  const Options o = knn::gpu::v16_options(env.params);
  const kd::LeafPlan plan = leaf_plan(p, o);
  const std::size_t points = p.reference_floats() + (p.self_join ? 0 : p.query_floats());
  return points * sizeof(float) + p.result_slots() * (sizeof(std::int32_t) + sizeof(float)) +
         std::size_t(p.m) * (knn::gpu::v16_early_wanted(o.answers, p.topk, (long long)p.result_slots() * 8) ? 4 : 3) * sizeof(std::uint64_t) + (1u << 20) + kd::device_bytes(plan, p.dim) +
         (tc_multiple(p, o) > 1 ? (plan.padded() + 128) * 32 : 0);  // v16.tc's packed rows
}

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v16";
  d.title = "kd-tree built and searched on the GPU (padded equal leaves, queries in waves sorted by leaf, box test)";
  d.family = knn::Family::tree;
  d.gpus = knn::GpuNeed::one;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (auto reason = knn::gpu::topk_supports(p, env)) return reason;
    return limits(p, env.params, env.devices[0].shared_per_block_optin);
  };
  d.device_bytes = v16_device_bytes;
  d.make = knn::query_only(v16_query);
  d.params = knn::gpu::v16_params();
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
