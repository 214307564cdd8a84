#pragma once
// The skip reasons the single-GPU top-k versions (v14, v17) share; each adds its own limits after.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "core/environment.hpp"
#include "core/problem.hpp"

namespace knn::gpu {

// No device, no dimension, no neighbour count, or a self-join whose m and n differ.
inline std::optional<std::string> topk_supports(const Problem& p, const Environment& env) {
  if (env.devices.empty()) return std::string("no CUDA device");
  if (p.dim < 1) return fmt::format("k = {}: needs at least one dimension", p.dim);
  if (p.topk < 1) return fmt::format("topk {} is not a neighbour count", p.topk);
  if (p.self_join && p.m != p.n) return fmt::format("a self-join needs m == n (m = {}, n = {})", p.m, p.n);
  return std::nullopt;
}

}  // namespace knn::gpu
