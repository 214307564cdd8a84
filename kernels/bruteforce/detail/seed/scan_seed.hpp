#pragma once
// v15's seed for scans with many queries and one chunk (self-joins above all): before the scan,
// every query gets an upper bound on its topk-th distance, the topk-th smallest exact distance to
// the rows beside it in Morton order, and the queries are scanned in Morton order. The scan then
// offers a row to a query's list only when its distance is at most that bound (the true topk
// nearest all are, since the window's rows are real candidates), so the lists almost never change
// after their first rows, and the 32 queries of a warp, being neighbours, change theirs on the
// same rows: the divergent insertions that dominated a self-join's scan are gone. The answers are
// the unseeded scan's: the rows, their distances (the same arithmetic) and the tie order.
// plan_seed is pure C++ (tested on the CPU); ScanSeed runs on the device (scan_seed_device.hpp).
#include <string>

#include "core/params.hpp"

namespace knn::gpu {

// Morton codes interleave up to 63 bits: at most this many dimensions (7 bits each at k = 9).
constexpr int kSeedMaxDim = 9;
// The seed serves the register lists (topk 2..32); topk 1's list costs one select per insertion.
constexpr int kSeedMinTopk = 2, kSeedMaxTopk = 32;
// Rows in a query's window: kSeedWindowPerTopk × topk, at least kSeedMinWindow.
constexpr int kSeedWindowPerTopk = 4, kSeedMinWindow = 64;
// v15.seed=auto seeds from this many queries, and only when the references hold at least
// kSeedMinRowsPerWindow windows (below that a scan is short and its lists fill from few rows).
constexpr int kSeedMinQueries = 1024;
// ... and at k <= kSeedAutoMaxDim: at k = 9 (the scan's run-time dimension, which reads the
// queries again for every group) the scattered query order made an H100's self-join 1.8x slower.
constexpr int kSeedAutoMaxDim = 5;
constexpr int kSeedMinRowsPerWindow = 16;

struct SeedPlan {
  bool chosen = false;
  int window = 0;   // rows per query's window
  std::string why;  // why not, when not chosen
};

// The seed for m queries of `dim` dimensions against n rows, topk neighbours, when the scan takes
// the references in `chunks` chunks; `mode` (v15.seed): auto (the rule below), off, on (wherever the
// seed applies).
inline SeedPlan plan_seed(int m, int n, int dim, int topk, int chunks, Mode mode) {
  SeedPlan s;
  s.window = topk * kSeedWindowPerTopk < kSeedMinWindow ? kSeedMinWindow : topk * kSeedWindowPerTopk;
  if (mode == Mode::off) s.why = "seed=off";
  else if (topk < kSeedMinTopk || topk > kSeedMaxTopk)
    s.why = "topk " + std::to_string(topk) + " (the seed serves the register lists, topk 2..32)";
  else if (dim > kSeedMaxDim)
    s.why = "k = " + std::to_string(dim) + " (Morton order up to k = " + std::to_string(kSeedMaxDim) + ")";
  else if (chunks != 1)
    s.why = std::to_string(chunks) + " chunks of references (the seed needs them all before the scan)";
  else if (mode == Mode::automatic && dim > kSeedAutoMaxDim)
    s.why = "k = " + std::to_string(dim) + " > " + std::to_string(kSeedAutoMaxDim) + " (seed=on seeds up to k = " +
            std::to_string(kSeedMaxDim) + ")";
  else if (mode == Mode::automatic && m < kSeedMinQueries)
    s.why = "m = " + std::to_string(m) + " < " + std::to_string(kSeedMinQueries) + " queries";
  else if (mode == Mode::automatic && (long long)n < (long long)kSeedMinRowsPerWindow * s.window)
    s.why = "n = " + std::to_string(n) + " < " + std::to_string(kSeedMinRowsPerWindow) + " windows of " +
            std::to_string(s.window) + " rows";
  else s.chosen = true;
  return s;
}

}  // namespace knn::gpu
