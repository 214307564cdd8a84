#pragma once
// v15's exact integer path. When every value is a whole number and all of them lie in a span of at
// most 256 (Problem::values, found by the harness before the timed call), shifting them by one
// constant puts every coordinate in [-128, 127] without changing a single distance, and then
// ‖q − r‖² = ‖q‖² + ‖r‖² − 2 q·r holds exactly in integers: the dot products come from an int8
// GEMM on the tensor cores with int32 accumulation (cuBLAS), each |q·r| ≤ k · 2^14, so nothing
// rounds for k ≤ 32768. The GEMM identity that loses precision in float (the peers' recipe) is
// exact here. A block per query then selects the topk smallest (distance, index) keys of its row
// (kernels/bruteforce/detail/int8/block_select.cuh). The plan and its rules are host code, tested on the CPU.
#include <cstddef>
#include <string>
#include <vector>

#include "core/params.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"

namespace knn::gpu {

// v15.int8: "auto" (the default: the path where it is exact and the shape pays), "off" (never:
// the fused float scan, for comparisons), "on" (wherever it is exact, whatever the shape).
using Int8Mode = knn::Mode;

// Below these the fused scan is as fast or faster (configs/studies/v15-int8.json on an H100, 1024
// queries against 2^20 whole-number points, top-10: k = 8 scan 10.3 ms, int8 10.5; k = 16 scan
// 16.2, int8 11.1; k = 64 with 8 queries scan 6.7, int8 7.3, with 32 queries 7.6 and 7.5): short
// rows waste the GEMM's 16-column tiles, and a few queries make it a matrix-vector product.
inline constexpr int kInt8MinDim = 16;
inline constexpr int kInt8MinQueries = 32;
// The largest dimension whose int32 sums cannot overflow: 32768 · 255² < 2^31.
inline constexpr int kInt8MaxDim = 32768;
// Whole values beyond this magnitude are not all exact in float, and the shift could round.
inline constexpr float kInt8MaxMagnitude = 16777216.f;  // 2^24
// Dot products kept per round: queries are taken in chunks whose int32 rows fit in this many bytes.
inline constexpr std::size_t kInt8DotBytes = std::size_t(1) << 30;

// The references' copy in chunks under the search (v15.int8_chunks): chunk boundaries are multiples
// of kInt8ChunkAlign rows (every chunk but the last a whole number of 4-row groups, as the GEMM's
// leading dimension needs, and of the GEMM's 64-row tiles). Self-joins copy and search unchunked
// (their queries are every chunk). `auto`: each chunk costs about 0.06 ms of its own (launches,
// events, a GEMM and a selection over fewer rows) and the first chunk's copy is not hidden, so with
// A the references' copy a call takes about the queries' copy + A / C + the compute + 0.06 ms · C,
// least at C = sqrt(A / 0.06 ms): in bytes, sqrt(bytes / kInt8ChunkCostBytes), the bytes one chunk's
// own cost would copy at the H100's 54.7 GB/s. Measured on Fashion-MNIST (179 MiB of references, an
// H100): 8 chunks 5.72 ms, 11 chunks 5.78, 16 chunks 5.91 (top-100: 6.46, 6.54, 6.66); the rule gives
// 8. At most kInt8MaxChunks (docs/v15.md).
inline constexpr int kInt8ChunkAlign = 64;
inline constexpr double kInt8ChunkCostBytes = 0.06e-3 * 54.7e9;
inline constexpr int kInt8MaxChunks = 16;
inline constexpr int kInt8ChunksAuto = 0;  // v15.int8_chunks=auto

struct Int8Plan {
  bool exact = false;   // the scheme is exact for these values
  bool chosen = false;  // and this call takes it
  std::string why;      // when not chosen: the reason, for the path line
  float shift = 0.f;    // value − shift lies in [-128, 127]
  int padded_dim = 0;   // k rounded up to 16 (zero columns change no dot product)
  int padded_n = 0;     // n rounded up to 4 (the GEMM's leading dimension)
  int query_chunk = 0;  // queries per GEMM + selection round
  // The reference chunks' first rows, then n: {0, n} for one chunk (the unpipelined path).
  std::vector<int> chunk_rows;
  int chunk_stride = 0;            // rows of a chunk's dot products: the largest chunk padded to 4
  std::string chunks_why;          // how the count was chosen, for the path line
  int chunks() const { return int(chunk_rows.size()) - 1; }
  bool pipelined() const { return chunks() > 1; }
};

// `chunks`: v15.int8_chunks (kInt8ChunksAuto: the rule; 1: the unpipelined path; more: asked for,
// fewer where n has fewer kInt8ChunkAlign-row blocks). `halve_first` (v15.int8_ramp): with several
// chunks, the first is cut in two halves, so the search starts after half its copy (one chunk more).
Int8Plan plan_int8(const Problem& p, Int8Mode mode, int chunks = kInt8ChunksAuto, bool halve_first = false);
// The chunk boundaries for `chunks` chunks of n rows (plan_int8's, exposed for the tests).
std::vector<int> int8_chunk_rows(int n, int chunks);
// `rows` (chunk boundaries) with the first of several chunks cut at its half, down to a multiple of
// kInt8ChunkAlign (unchanged where that is 0).
std::vector<int> int8_halve_first(std::vector<int> rows);
// Device memory one call on this path needs (inputs as float and int8, norms, one round of dot
// products (two with chunks, at half the cap each), the carried keys, answers, and a margin for
// cuBLAS's workspace).
std::size_t int8_device_bytes(const Problem& p, const Int8Plan& plan);
// Answers the problem on the current device along the plan (plan.chosen must be true).
void int8_search(const Problem& p, const Int8Plan& plan, Neighbors out, RunContext& ctx);

}  // namespace knn::gpu
