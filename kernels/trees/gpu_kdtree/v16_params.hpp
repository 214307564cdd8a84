#pragma once
// v16's declared parameters (kernels/trees/gpu_kdtree/v16_gpu_kdtree.cu). Plain C++: the tests check the
// declarations in builds without CUDA too.
#include <string>
#include <vector>

#include "core/params.hpp"

namespace knn::gpu {

// v16.answers=auto takes direct from this topk: on an H100, topk 32 saved 0.46-0.52 ms (cases 200, 510)
// and topk 5 lost 0.14 ms (case 405), its rows of 20 bytes being small writes across the bus.
inline constexpr int kV16DirectMinTopk = 32;
inline bool v16_direct_wanted(const std::string& answers, int topk) {
  return answers == "direct" || (answers == "auto" && topk >= kV16DirectMinTopk);
}

inline std::vector<ParamDecl> v16_params() {
  using P = ParamDecl;
  return {
      P::integer("leaf", 0, 0, 8192, "the minimum leaf size; 0 (default): 128 from topk 32, else 256", "KNN_V16_LEAF"),
      P::choice("test", "box", {"box", "median"}, "a subtree's test against the K-th distance: its box, or its splitting plane",
                "KNN_V16_TEST"),
      P::flag("sort", true, "each wave's queries sorted by leaf (off: unsorted)", "KNN_V16_SORT"),
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
                "and keeps its own copy of the heap; auto: 8 in the last kernel (few queries, long chains of leaves), 1 in the sorted waves"),
      P::choice("answers", "auto", {"auto", "direct", "copy"},
                "how the answers reach the output: direct (the heap kernel writes each finished query's row into a pinned output "
                "during the waves; topk 1 without a self-join, and pageable outputs, copy), copy (one copy after the search), or "
                "auto (direct from topk 32: rows of 128 bytes)"),
      P::choice("readback", "lag", {"lag", "wait"},
                "how the host learns each wave's count of remaining queries: lag (read one wave late, so the next wave is queued "
                "while one runs; each wave after the first is then a pair of launches, a sorted wave and the last kernel, that pick "
                "on the device by the exact count), or wait (the host waits for each wave's count before it queues the next; "
                "taken anyway with sort or final off)"),
      P::integer("stage_kib", 0, 0, 160, "shared memory for staged leaves, KiB (default 0: an H100 reads a shared leaf through L1 faster)",
                 "KNN_V16_STAGE_KIB"),
  };
}

}  // namespace knn::gpu
