#pragma once
// v16's declared parameters (kernels/trees/gpu_kdtree/v16_gpu_kdtree.cu). Plain C++: the tests check the
// declarations in builds without CUDA too.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/params.hpp"

namespace knn::gpu {

// v16.answers=auto takes direct from this topk: on an H100, topk 32 saved 0.46-0.52 ms (cases 200, 510)
// and topk 5 lost 0.14 ms (case 405), its rows of 20 bytes being small writes across the bus.
inline constexpr int kV16DirectMinTopk = 32;
inline bool v16_direct_wanted(const std::string& answers, int topk) {
  return answers == "direct" || (answers == "auto" && topk >= kV16DirectMinTopk);
}
// early (auto below topk 32): one bulk copy of the answers starts once a wave leaves at most
// early_pct percent of the queries active, and runs under the later waves; the rows of the queries
// still active then are written into the pinned output after the search.
// auto takes it from 1 MiB of answers (m x topk x 8 bytes): below that the copy takes under 20 us on
// an H100, and the call would only pay for the setup.
inline constexpr long long kV16EarlyMinBytes = 1 << 20;
inline bool v16_early_wanted(const std::string& answers, int topk, long long answer_bytes) {
  return answers == "early" || (answers == "auto" && topk < kV16DirectMinTopk && answer_bytes >= kV16EarlyMinBytes);
}
// v16.key_sort=auto counts below this many keys and radix-sorts from there: on an H100 (case 405) a
// counting pass took 17-28 us for 74k-200k keys against the radix sort's 26-30, and 53-93 us for
// 0.7-1 M keys against 43-47 (its atomics on the first wave's random leaves).
inline constexpr int kV16CountSortMaxKeys = 1 << 18;
inline bool v16_count_sort(const std::string& key_sort, long long keys) {
  return key_sort == "count" || (key_sort == "auto" && keys < kV16CountSortMaxKeys);
}

// answers=auto starts the copy only where the waves after the first have run at least this many times
// the copy's estimated time (its bytes at kV16EarlyCopyGBps) by the first wave that leaves at most
// early_pct percent active: on an H100 the seeds' 2^20-query cases (5.7-71 ms of search) gained 0.4-0.5
// ms, and the trees' cases 100 and 103 (0.5 and 2.4 ms of search; 8 and 64 MiB of answers) lost 0.16
// and 0.11 ms, their copy not hidden by the little search left. answers=early starts it regardless.
inline constexpr double kV16EarlyMinRatio = 3.0;
inline constexpr double kV16EarlyCopyGBps = 50.0;  // an H100's pinned copy to the host, 54 GB/s, rounded down
inline double v16_early_min_ms(long long answer_bytes) { return kV16EarlyMinRatio * double(answer_bytes) / (kV16EarlyCopyGBps * 1e6); }

// The most queries still active at the bulk copy's start: early_pct percent of m, at least 1.
inline long long v16_early_limit(long long m, int early_pct) { return std::max(1LL, m * early_pct / 100); }

// How a call's answers reached the output, as its path says it (v16_gpu_kdtree.cu).
struct V16AnswersRun {
  std::string answers = "auto";  // the parameter's value
  int topk = 1, early_pct = 10;
  long long answer_bytes = 0;  // m x topk x (4 + 4)
  bool direct = false;   // answers=direct taken: the heap kernel wrote every row
  bool nearest = false;  // the nearest-pair kernel ran (it writes no rows into the output itself)
  bool lag = true;       // readback=lag in effect
  bool mapped = true;    // the output (and the counts' staging) pinned memory the device can address
  long long early_limit = 0;
  int cut_wave = -1, held = 0;  // early: the copy began after this wave (from 1), whose `held` queries' rows could change
  int checked_wave = -1;        // auto: the wave (from 1) that left at most early_pct percent, where the time fell short
  double waited_ms = 0;         // the waves' time by then (from the end of the first)
};

inline std::string v16_answers_text(const V16AnswersRun& r) {
  const bool direct_wanted = v16_direct_wanted(r.answers, r.topk);
  const std::string as = r.answers != "auto" ? r.answers : direct_wanted ? "auto: direct from topk 32" : "auto: early below topk 32";
  const std::string unpinned = "the output is not pinned memory the device can address";
  if (r.direct) return fmt::format("answers written by the heap kernel into the pinned output as queries finish (answers={}: phase search_d2h)", as);
  if (r.cut_wave >= 0)
    return fmt::format("answers copied in one piece from the end of wave {} on, under the later waves, and the rows of its {} queries written "
                       "again after the search (answers={}, early_pct={}: phase d2h is the copy's tail and those rows)",
                       r.cut_wave, r.held, as, r.early_pct);
  if (r.answers == "auto" && r.topk < kV16DirectMinTopk && r.answer_bytes < kV16EarlyMinBytes)
    return fmt::format("answers copied after the search (answers=auto: early from {} bytes of answers, these are {})", kV16EarlyMinBytes,
                       r.answer_bytes);
  if (r.checked_wave >= 0)
    return fmt::format("answers copied after the search (answers={}, early not taken: wave {} left at most {} % active after {:.3f} ms of "
                       "waves, under {} x the copy's {:.3f} ms at {} GB/s)",
                       as, r.checked_wave, r.early_pct, r.waited_ms, kV16EarlyMinRatio, v16_early_min_ms(r.answer_bytes) / kV16EarlyMinRatio,
                       kV16EarlyCopyGBps);
  if (v16_early_wanted(r.answers, r.topk, r.answer_bytes))
    return fmt::format("answers copied after the search (answers={}, early not taken: {})", as,
                       !r.lag      ? std::string("it needs readback=lag with sort and final on")
                       : !r.mapped ? unpinned
                                   : fmt::format("no wave left at most {} queries ({} %) active before the last kernel", r.early_limit, r.early_pct));
  if (!direct_wanted) return fmt::format("answers copied after the search (answers={})", as);
  return fmt::format("answers copied after the search (answers={}, not taken: {})", as, r.nearest ? "the nearest-pair kernel" : unpinned);
}

// v16.first_batch=auto: the first wave's insertions held back every 8 rows below topk 32, not from there. On
// an H200 (interleaved, 0 against 16) 405 went from 8.121 to 7.956 ms, 409 77.20 to 76.57, 407 22.90 to 22.70
// and 302 48.83 to 48.66; 510 (topk 32, heaps of 32 KiB a block) lost, 2.038 to 2.107: the buffer's shared
// memory costs blocks. On 405 and 409 8 slots did as well as 16 (7.949 / 76.75 ms), 4 and 32 worse.
inline constexpr int kV16FirstBatchAuto = 8;
inline int v16_first_batch(int knob, int topk) { return knob >= 0 ? knob : topk < kV16DirectMinTopk ? kV16FirstBatchAuto : 0; }

// The parameters as the code reads them (v16_gpu_kdtree.cu).
struct V16Options {
  int min_leaf = 0, stage_kib = 0;  // min_leaf 0: by topk (kd::leaf_for)
  bool box = true, sort = true, final_steps = true;
  int vec = 1;    // leaf rows: 0 one float at a time, 1 float4 groups
  int tail = 16;  // the last kernel takes over below tail x leaves active queries
  bool nearest = true;  // topk = 1 (no self-join): the pair in registers (kdtree_gpu_waves.cuh)
  std::string answers = "auto";  // direct: the heap kernel writes finished rows into a pinned output; copy; early; auto
  std::string key_sort = "auto";  // each wave's keys: radix, count (a counting pass over the leaves), auto (count below kV16CountSortMaxKeys)
  int early_pct = 10;            // answers=early: the bulk copy starts once at most this percent of the queries are active
  int lanes = 0;        // lanes per query of that kernel: 1, 2, 4, 8, or 0 (by the wave's size)
  int heap_lanes = 0;   // the same for the heap kernel (1 wherever leaves are staged)
  int tail_lanes = 0;   // heap_lanes=auto: the last kernel's lanes per query (the sorted waves take 1); 0: auto (v16_tail_lanes)
  int first_batch = -1;  // the first wave at one lane a key: rows held back between insertions into the heaps (0: none; -1: auto)
  bool overlap = true;  // the queries copied during the build
  bool lag = true;      // readback=lag: each wave's count read back one wave late
  long long segment_rows = 8192;  // the build's levels with nodes this small: a segmented sort
  std::string build = "auto";     // lists (presorted, partitioned per level), sort (a sort per level), auto
  std::string tc = "auto";        // the waves' leaves scanned on the tensor cores where a warp's queries sit on few (kdtree_gpu_tc.cuh)
  int tc_leaves = 4;              // tc: the most distinct leaves of a warp scanned that way, one after another
  std::string tc_regs = "64";      // tc: its kernel's registers a thread: 64 (compiled for 8 blocks an SM) or auto
  bool tail_queue = true;         // the last kernel at 32 lanes: warps take queries from a counter (kdtree_gpu_tail.cuh)
  std::string source;  // the parameters the user set, " name=value" each
};

// v16.tail_lanes=auto: 32 lanes a query in the last kernel from k 6 (an H200: 412 316 -> 275 ms, 409 69.0 -> 66.4,
// 302 43.5 -> 41.9), else 8 (below k 6 no gain: 405's search 5.22 against 5.20 ms, 101, 103 and 519 0.2-0.3 % slower; docs/v16.md).
inline int v16_tail_lanes(int knob, int dim) { return knob > 0 ? knob : dim >= 6 ? 32 : 8; }

inline V16Options v16_options(const ParamValues& v) {
  V16Options o;
  o.min_leaf = int(v.integer("leaf"));
  o.stage_kib = int(v.integer("stage_kib"));
  o.sort = v.on("sort");
  o.final_steps = v.on("final");
  o.tail = int(v.integer("tail"));
  o.vec = v.on("vec") ? 1 : 0;
  o.nearest = v.on("nearest");
  o.lanes = v.text("lanes") == "auto" ? 0 : int(v.integer("lanes"));
  o.heap_lanes = v.text("heap_lanes") == "auto" ? 0 : int(v.integer("heap_lanes"));
  o.tail_lanes = v.text("tail_lanes") == "auto" ? 0 : int(v.integer("tail_lanes"));
  o.first_batch = v.text("first_batch") == "auto" ? -1 : int(v.integer("first_batch"));
  o.overlap = v.on("overlap");
  o.lag = v.text("readback") == "lag";
  o.segment_rows = v.integer("segment_rows");
  o.build = v.text("build");
  o.box = v.text("test") == "box";
  o.answers = v.text("answers");
  o.early_pct = int(v.integer("early_pct"));
  o.key_sort = v.text("key_sort");
  o.tc = v.text("tc");
  o.tc_leaves = int(v.integer("tc_leaves"));
  o.tc_regs = v.text("tc_regs");
  o.tail_queue = v.on("tail_queue");
  for (const std::string& name : v.set_names()) o.source += " " + name + "=" + v.text(name);
  return o;
}

inline std::vector<ParamDecl> v16_params() {
  using P = ParamDecl;
  return {
      P::integer("leaf", 0, 0, 8192, "the minimum leaf size; 0 (default): 128 from topk 32, else 256", "KNN_V16_LEAF"),
      P::choice("test", "box", {"box", "median"}, "a subtree's test against the K-th distance: its box, or its splitting plane",
                "KNN_V16_TEST"),
      P::flag("sort", true, "each wave's queries sorted by leaf (off: unsorted)", "KNN_V16_SORT"),
      P::choice("key_sort", "auto", {"auto", "radix", "count"},
                "how each wave's (leaf, query) keys are ordered by leaf: radix (CUB's radix sort of the leaf bits, stable), count "
                "(one counting pass: a histogram of the leaves, its scan, each key placed at its leaf's next slot; a leaf's queries in "
                "no fixed order), or auto (count below 2^18 keys, radix from there)"),
      P::flag("final", true, "the final steps: finished queries sort to the end, and one kernel runs the last ones to the end",
              "KNN_V16_FINAL"),
      P::integer("tail", 16, 1, 1024, "the last kernel takes over below tail x leaves active queries (default 16; 1: the thesis's rule)",
                 "KNN_V16_TAIL"),
      P::flag("vec", true, "leaf rows read as float4 groups where k is compiled in (off: one float at a time)", "KNN_V16_VEC"),
      P::flag("nearest", true, "topk 1 without a self-join: the pair in registers (off: the heap kernel)", "KNN_V16_NEAREST"),
      P::choice("lanes", "auto", {"auto", "1", "2", "4", "8"}, "lanes per query of the nearest-pair kernel; auto: by the wave's size",
                "KNN_V16_LANES"),
      P::integer("segment_rows", 8192, 0, 1 << 30,
                 "the build's levels whose nodes hold at most this many rows sort each node on its own (a segmented sort of the "
                 "coordinates); 0: every level one radix sort of (node, coordinate) keys over all rows"),
      P::choice("build", "auto", {"auto", "lists", "sort"},
                "how the tree is built: lists (every dimension's order sorted once, then partitioned stably level by level), sort "
                "(a radix or segmented sort of every level's split coordinates), or auto (lists up to 16 dimensions)"),
      P::flag("overlap", true, "the queries copied up on a second stream while the tree is built (off: before the build)"),
      P::choice("heap_lanes", "auto", {"auto", "1", "2", "4", "8"},
                "lanes per query of the heap kernel (topk above 1, or a self-join): each lane scores every L-th group of the leaf "
                "and keeps its own copy of the heap; auto: tail_lanes in the last kernel (few queries, long chains of leaves), 1 in the sorted waves"),
      P::choice("tail_lanes", "auto", {"auto", "8", "16", "32"},
                "with heap_lanes=auto, the lanes per query of the last kernel, where each remaining query runs its chain of leaves "
                "alone: every leaf's rows split over this many lanes, each holding a copy of the heap; auto: 32 from k 6, else 8"),
      P::flag("tail_queue", true,
              "the last kernel at 32 lanes a query (tail_lanes): a grid of the blocks the device holds at once, whose warps each "
              "take their next query from a counter when one ends (off: a warp a query, four a block, a block's slot held until "
              "its longest chain ends)"),
      P::choice("first_batch", "auto", {"auto", "0", "4", "8", "16", "32"},
                "the first wave (every heap empty) at one lane a query, leaves not staged: the rows closer than the K-th are held in "
                "a buffer of this many slots per thread (shared memory) and put into the heap after every this many rows, by the "
                "lanes of a warp side by side; 0: each row into the heap as it is found (a lane's insertion then stalls its warp); auto: 8 "
                "below topk 32, else 0"),
      P::choice("answers", "auto", {"auto", "direct", "copy", "early"},
                "how the answers reach the output: direct (the heap kernel writes each finished query's row into a pinned output "
                "during the waves; topk 1 without a self-join, and pageable outputs, copy), copy (one copy after the search), "
                "early (one copy of every row into a pinned output starts under the waves once at most early_pct percent of the "
                "queries are active, and the rows of those queries are written again after the search; with readback=lag), or "
                "auto (direct from topk 32: rows of 128 bytes; early below)"),
      P::integer("early_pct", 10, 1, 100,
                 "answers=early: the bulk copy starts after the first wave that leaves at most this percent of the queries active"),
      P::choice("readback", "lag", {"lag", "wait"},
                "how the host learns each wave's count of remaining queries: lag (read one wave late, so the next wave is queued "
                "while one runs; each wave after the first is then a pair of launches, a sorted wave and the last kernel, that pick "
                "on the device by the exact count), or wait (the host waits for each wave's count before it queues the next; "
                "taken anyway with sort or final off)"),
      P::choice("tc", "auto", {"auto", "off", "on"},
                "the heap kernel of the waves before the last kernel: where a warp's 32 queries sit on at most tc_leaves leaves and "
                "every heap is full, each leaf's rows are filtered on the tensor cores (v15's tile filter's fp16 scores and error "
                "bound; candidates take the exact distance, so the answers do not change); k 1..12 compiled in, compute capability "
                "8.0 and later, examined finite values; the leaves are then planned in whole 8-row groups; auto: on from k 6 with at "
                "least 65536 queries"),
      P::integer("tc_leaves", 4, 1, 32,
                 "with tc: the most distinct leaves the 32 queries of a warp may sit on for the warp to filter them on the tensor "
                 "cores, one leaf after another (the queries on another leaf take nothing from it); 1: only a warp on one leaf"),
      P::choice("tc_regs", "64", {"64", "auto"},
                "with tc, the registers a thread of its kernel may use: 64 (the kernel compiled for 8 blocks of 128 threads an SM), or "
                "auto (the compiler's choice: 72 at k 9, which leaves room for 7 blocks)"),
      P::integer("stage_kib", 0, 0, 160, "shared memory for staged leaves, KiB (default 0: an H100 reads a shared leaf through L1 faster)",
                 "KNN_V16_STAGE_KIB"),
  };
}

}  // namespace knn::gpu
