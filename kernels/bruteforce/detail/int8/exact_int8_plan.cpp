#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/bruteforce/detail/int8/exact_int8.hpp"
#include "kernels/bruteforce/engine.hpp"

namespace knn::gpu {

Int8Plan plan_int8(const Problem& p, Int8Mode mode) {
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
  const std::int64_t per_round = std::int64_t(kInt8DotBytes / (sizeof(std::int32_t) * std::size_t(std::max(1, plan.padded_n))));
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
  bytes += std::size_t(plan.query_chunk) * std::size_t(plan.padded_n) * sizeof(std::int32_t);  // one round's dots
  bytes += p.result_slots() * (sizeof(std::int32_t) + sizeof(float));
  return bytes + (std::size_t(64) << 20);  // cuBLAS's workspace and kernels
}

}  // namespace knn::gpu
