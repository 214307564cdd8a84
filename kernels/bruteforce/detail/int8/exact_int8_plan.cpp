#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bruteforce/detail/int8/exact_int8.hpp"
#include "kernels/bruteforce/engine.hpp"

namespace knn::gpu {

std::vector<int> int8_chunk_rows(int n, int chunks) {
  // Rows per chunk: n / chunks rounded up to the alignment, so no chunk but the last is short and
  // every boundary is a multiple of kInt8ChunkAlign; fewer chunks where n has fewer such blocks.
  const std::int64_t per = (std::int64_t(n) + std::max(1, chunks) - 1) / std::max(1, chunks);
  const std::int64_t rows = std::max<std::int64_t>(kInt8ChunkAlign, (per + kInt8ChunkAlign - 1) / kInt8ChunkAlign * kInt8ChunkAlign);
  std::vector<int> bounds{0};
  for (std::int64_t r = rows; r < n; r += rows) bounds.push_back(int(r));
  bounds.push_back(n);
  return bounds;
}

std::vector<int> int8_halve_first(std::vector<int> rows) {
  if (rows.size() < 3) return rows;  // one chunk: nothing is searched before the whole copy anyway
  const int half = rows[1] / 2 / kInt8ChunkAlign * kInt8ChunkAlign;
  if (half > 0) rows.insert(rows.begin() + 1, half);
  return rows;
}

Int8Plan plan_int8(const Problem& p, Int8Mode mode, int chunks, bool halve_first) {
  Int8Plan plan;
  const ValueTraits& v = p.values;
  if (mode == Int8Mode::off) {
    plan.why = "int8=off";
    return plan;
  }
  if (!v.known) {
    plan.why = "values not examined";
    return plan;
  }
  if (!v.whole) {
    plan.why = "not every value is a whole number";
    return plan;
  }
  if (std::fabs(v.lowest) > kInt8MaxMagnitude || std::fabs(v.highest) > kInt8MaxMagnitude) {
    plan.why = fmt::format("whole values beyond 2^24 ({:g} .. {:g})", v.lowest, v.highest);
    return plan;
  }
  if (double(v.highest) - double(v.lowest) > 255.0) {
    plan.why = fmt::format("values span {:g} .. {:g}, more than 256 integers", v.lowest, v.highest);
    return plan;
  }
  if (p.dim > kInt8MaxDim) {
    plan.why = fmt::format("k = {} > {}: int32 sums could overflow", p.dim, kInt8MaxDim);
    return plan;
  }
  if (p.topk > kFusedTopkMax) {
    plan.why = fmt::format("topk {} > {}", p.topk, kFusedTopkMax);
    return plan;
  }
  plan.exact = true;
  plan.shift = v.lowest + 128.f;
  plan.padded_dim = (p.dim + 15) / 16 * 16;
  plan.padded_n = int((std::int64_t(p.n) + 3) / 4 * 4);
  const std::size_t reference_bytes = std::size_t(std::max(0, p.n)) * std::size_t(std::max(0, p.dim)) * sizeof(float);
  int wanted = chunks;
  if (p.self_join) {
    wanted = 1, plan.chunks_why = "a self-join: its queries are every chunk";
  } else if (chunks == kInt8ChunksAuto) {
    wanted = int(std::clamp<long>(std::lround(std::sqrt(double(reference_bytes) / kInt8ChunkCostBytes)), 1, kInt8MaxChunks));
    plan.chunks_why = fmt::format("int8_chunks=auto: {:.1f} MiB of references, sqrt of their copy over a chunk's own 0.06 ms",
                                  reference_bytes / 1048576.0);
  } else {
    plan.chunks_why = fmt::format("int8_chunks={}", chunks);
  }
  plan.chunk_rows = int8_chunk_rows(std::max(0, p.n), wanted);
  if (halve_first && plan.chunks() > 1) {
    const int before = plan.chunks();
    plan.chunk_rows = int8_halve_first(plan.chunk_rows);
    if (plan.chunks() > before) plan.chunks_why += "; the first halved";
  }
  // One round's dot products fit the cap; with chunks, two rounds' (the GEMM writes one while the
  // selection reads the other).
  int largest = 0;
  for (int c = 0; c < plan.chunks(); ++c) largest = std::max(largest, plan.chunk_rows[c + 1] - plan.chunk_rows[c]);
  plan.chunk_stride = plan.pipelined() ? (largest + 3) / 4 * 4 : plan.padded_n;
  const std::size_t cap = plan.pipelined() ? kInt8DotBytes / 2 : kInt8DotBytes;
  const std::int64_t per_round = std::int64_t(cap / (sizeof(std::int32_t) * std::size_t(std::max(1, plan.chunk_stride))));
  plan.query_chunk = int(std::clamp<std::int64_t>(per_round, 1, std::max(1, p.m)));
  if (mode == Int8Mode::automatic && (p.dim < kInt8MinDim || p.m < kInt8MinQueries)) {
    plan.why = fmt::format("k = {}, m = {}: the int8 GEMM pays from k ≥ {} and m ≥ {}", p.dim, p.m, kInt8MinDim, kInt8MinQueries);
    return plan;
  }
  plan.chosen = true;
  return plan;
}

std::size_t int8_device_bytes(const Problem& p, const Int8Plan& plan) {
  const std::size_t own_queries = p.self_join ? 0 : std::size_t(p.m);
  std::size_t bytes = (own_queries + std::size_t(p.n)) * p.dim * sizeof(float);          // the inputs as given
  bytes += (own_queries + std::size_t(plan.padded_n)) * std::size_t(plan.padded_dim);     // as int8
  bytes += (std::size_t(p.m) + std::size_t(plan.padded_n)) * sizeof(std::int32_t);        // squared norms
  const std::size_t rounds = plan.pipelined() ? 2 : 1;  // dot products: one round, or two with chunks
  bytes += rounds * std::size_t(plan.query_chunk) * std::size_t(plan.chunk_stride) * sizeof(std::int32_t);
  if (plan.pipelined()) bytes += std::size_t(p.m) * std::size_t(p.topk) * sizeof(std::uint64_t);  // the carried keys
  bytes += p.result_slots() * (sizeof(std::int32_t) + sizeof(float));
  return bytes + (std::size_t(64) << 20);  // cuBLAS's workspace and kernels
}

}  // namespace knn::gpu
