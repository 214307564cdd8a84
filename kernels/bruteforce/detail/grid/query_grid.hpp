#pragma once
// v15's query grid: few queries of 1 to 3 dimensions against many rows. The queries are sorted into
// a grid of cells over their bounding box once per call; each cell keeps the tight box of its
// queries. Before each chunk, every cell's box is widened by the reach of its largest current bound
// (the distance of each query's topk-th key), and each cell of the grid notes which widened boxes meet
// it. A row then meets only the queries of those cells whose box lies within their bound. The rest of
// a chunk's work per row is a few box tests, so the search of a chunk can take a fraction of its copy
// and the call follow the copy (case 10: 1024 × 2^20, k 3). Exact: a pruned query's exact distance exceeds its bound (the box's distance is summed with
// the same roundings and is no larger, query_grid_kernels.cuh says why), and every offered key is the fused
// scan's (the same exact fp32 distance, the same key order), so the answers are the scan's, bit for
// bit. The plan is host code, tested on the CPU.
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/params.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"

namespace knn::gpu {

inline constexpr int kGridMaxDim = 3;
inline constexpr int kGridMaxQueries = 2048;  // measured up to 2048 (cells grow to 512 from 1024 queries)
inline constexpr int kGridMaxTopk = 32;
inline constexpr int kGridMaxRows = 0x7fffffff - 65536;  // a thread's rows run past n by at most a block's
inline constexpr int kGridMaxCells = 512;     // about 2 queries a cell
inline constexpr int kGridBlock = 256;
inline constexpr int kGridRowsPerThread = 2;  // rows of a chunk per thread of a search block (more warps hide its latencies)
// The automatic rule (v15.grid=auto): topk 1, k ≤ 2, from 1024 queries against 2^20 rows, where it won
// on an H100 (1024 × 2^20 uniform: k 1 0.195 ms against 0.383, k 2 0.309 against 0.346). At k 3 it lost
// on case 10 (0.439 against the fp32 filter's 0.392) and on clustered rows (0.795 against 0.417), and
// won only from 2^22 rows (docs/v15.md, "The query grid"); clustered data at k ≤ 2 was not measured.
inline constexpr int kGridAutoMaxDim = 2;
inline constexpr int kGridMinQueries = 1024;
inline constexpr int kGridMinRows = 1 << 20;
// Chunks: the first of 256 KiB, each next twice the one before up to 4 MiB (while what is left is over
// twice the next), then 4 MiB chunks; the last of those is cut in halves while what is left is over
// 2 × 1 MiB, so the search after the last copy is short. (Each copy costs a few µs more than its bytes: 11 chunks of at most 2 MiB took case
// 10's copy 0.029 ms longer than 5 of at most 4.5 MiB.)
inline constexpr std::size_t kGridFirstChunkBytes = std::size_t(256) << 10;
inline constexpr std::size_t kGridChunkBytes = std::size_t(4) << 20;
inline constexpr std::size_t kGridLastChunkBytes = std::size_t(1) << 20;

struct GridPlan {
  bool chosen = false;
  std::string why;  // when not chosen: the reason
  int side = 1;     // cells per dimension
  int cells = 1;    // side^k
  std::vector<int> chunk_rows;
  int chunks() const { return int(chunk_rows.size()) - 1; }
};

// Cells per dimension: the largest s with s^dim at most min(max(1, m / 2), kGridMaxCells).
inline int grid_side(int m, int dim) {
  const long long target = std::min<long long>(std::max(1, m / 2), kGridMaxCells);
  int side = 1;
  const auto cells = [dim](long long s) {
    long long c = 1;
    for (int t = 0; t < dim; ++t) c *= s;
    return c;
  };
  while (cells(side + 1) <= target) ++side;
  return side;
}

// Chunk boundaries for n rows of row_bytes each (above).
inline std::vector<int> grid_chunks(int n, std::size_t row_bytes) {
  const long long full = std::max<long long>(1, (long long)(kGridChunkBytes / row_bytes));
  const long long last = std::max<long long>(1, (long long)(kGridLastChunkBytes / row_bytes));
  long long chunk = std::max<long long>(1, (long long)(kGridFirstChunkBytes / row_bytes));
  std::vector<int> rows{0};
  long long at = 0;
  const auto take = [&](long long rows_taken) { rows.push_back(int(at += rows_taken)); };
  for (; chunk < full && n - at > 2 * chunk; chunk *= 2) take(chunk);  // the ramp
  while (n - at > 2 * full) take(full);
  while (n - at > 2 * last) take((n - at) / 2);  // the taper
  if (rows.back() != n) rows.push_back(n);
  return rows;
}

// `mode` is v15.grid: on takes it wherever it applies (no self-join, values examined and finite,
// k ≤ 3, topk ≤ 32, m ≤ 2048), auto adds topk 1, k ≤ 2, m ≥ 1024 and n ≥ 2^20.
inline GridPlan plan_grid(const Problem& p, Mode mode) {
  GridPlan g;
  const auto no = [&](std::string why) {
    g.why = std::move(why);
    return g;
  };
  if (mode == Mode::off) return no("grid=off");
  if (p.self_join) return no("a self-join");
  if (!p.values.known || !p.values.finite) return no("values not examined, or not all finite");
  if (p.dim > kGridMaxDim) return no(fmt::format("k = {} over {}", p.dim, kGridMaxDim));
  if (p.topk > kGridMaxTopk) return no(fmt::format("topk {} over {}", p.topk, kGridMaxTopk));
  if (p.m > kGridMaxQueries) return no(fmt::format("m = {} over {}", p.m, kGridMaxQueries));
  if (p.n > kGridMaxRows) return no(fmt::format("n = {} over 2^31 - 2^16 (the kernels' int rows)", p.n));
  if (mode == Mode::automatic) {
    if (p.topk != 1) return no("auto: topk 1 only");
    if (p.dim > kGridAutoMaxDim) return no(fmt::format("auto: k = {} over {} (slower at k 3 on an H100)", p.dim, kGridAutoMaxDim));
    if (p.m < kGridMinQueries) return no(fmt::format("auto: m = {} under {}", p.m, kGridMinQueries));
    if (p.n < kGridMinRows) return no(fmt::format("auto: n = {} under 2^20", p.n));
  }
  g.chosen = true;
  g.side = grid_side(p.m, p.dim);
  g.cells = 1;
  for (int t = 0; t < p.dim; ++t) g.cells *= g.side;
  g.chunk_rows = grid_chunks(p.n, std::size_t(p.dim) * sizeof(float));
  return g;
}

std::size_t grid_device_bytes(const Problem& p, const GridPlan& plan);
void grid_search(const Problem& p, const GridPlan& plan, Neighbors out, RunContext& ctx);

}  // namespace knn::gpu
