// The host reference of the STR packing (str_pack.hpp): the plan both builders follow and a serial
// builder that the GPU build is tested against.
#include "kernels/trees/rtree/str_pack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace knn::str {

LevelPlan plan_level(std::int64_t count, int dim, int fanout) {
  LevelPlan plan;
  plan.count = count;
  plan.groups = (count + fanout - 1) / fanout;
  if (plan.groups <= 1) return plan;
  int log2_groups = 0;
  while ((std::int64_t(1) << (log2_groups + 1)) <= plan.groups) ++log2_groups;
  plan.sort_dims = std::min(dim, log2_groups);  // every dimension in play is cut at least in two
  // Slabs per dimension: all 2, then one more for dimensions 0, 1, ... in turn until their product
  // reaches the group count (so no pass sorts a segment the next pass merely re-sorts).
  std::vector<std::int64_t> slabs(std::size_t(plan.sort_dims), 2);
  auto groups_from = [&](int d) {  // product of slabs[d ..], capped at the group count
    std::int64_t r = 1;
    for (int j = d; j < plan.sort_dims && r < plan.groups; ++j) r = std::min(plan.groups, r * slabs[j]);
    return r;
  };
  for (int j = 0; groups_from(0) < plan.groups; j = (j + 1) % plan.sort_dims) ++slabs[j];
  for (int d = 0; d < plan.sort_dims; ++d) plan.segment.push_back(std::min(count, groups_from(d) * fanout));
  return plan;
}

Shape plan_tree(std::int64_t n, int dim, int fanout) {
  if (n < 1) throw std::invalid_argument(fmt::format("STR packing: n = {}: needs at least one point", n));
  if (dim < 1) throw std::invalid_argument(fmt::format("STR packing: k = {}: needs at least one dimension", dim));
  if (fanout < kMinFanout || fanout > kMaxFanout)
    throw std::invalid_argument(
        fmt::format("STR packing: fan-out {} is outside [{}, {}]", fanout, kMinFanout, kMaxFanout));
  Shape s;
  s.dim = dim;
  s.fanout = fanout;
  s.n = n;
  s.level_begin = {0};
  for (std::int64_t count = n;;) {
    const std::int64_t groups = (count + fanout - 1) / fanout;
    s.level_begin.push_back(s.level_begin.back() + groups);
    if (groups == 1) break;
    count = groups;
  }
  return s;
}

std::vector<std::int32_t> str_order(const float* keys, std::int64_t count, int dim, int fanout) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  const LevelPlan plan = plan_level(count, dim, fanout);
  std::vector<std::pair<std::uint64_t, std::int32_t>> keyed(order.size());
  for (int d = 0; d < plan.sort_dims; ++d) {
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::uint64_t segment = std::uint64_t(std::int64_t(i) / plan.segment[d]);
      keyed[i] = {segment << 32 | orderable_bits(keys[std::size_t(order[i]) * dim + d]), order[i]};
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = keyed[i].second;
  }
  return order;
}

namespace {

// Box of node `node` = union of the rows [first, last) of `rows` (lo == hi == row for one row).
void box_of_rows(Tree& t, std::int64_t node, const float* rows, std::int64_t first, std::int64_t last, bool boxes) {
  const int dim = t.shape.dim;
  float* lo = &t.lo[std::size_t(node) * dim];
  float* hi = &t.hi[std::size_t(node) * dim];
  for (std::int64_t r = first; r < last; ++r)
    for (int k = 0; k < dim; ++k) {
      const float a = boxes ? t.lo[std::size_t(r) * dim + k] : rows[std::size_t(r) * dim + k];
      const float b = boxes ? t.hi[std::size_t(r) * dim + k] : a;
      lo[k] = r == first ? a : coord_min(lo[k], a);
      hi[k] = r == first ? b : coord_max(hi[k], b);
    }
}

}  // namespace

Tree build_host(const float* points, std::int64_t n, int dim, int fanout) {
  Tree t;
  t.shape = plan_tree(n, dim, fanout);
  const std::size_t nodes = std::size_t(t.shape.nodes());
  t.lo.assign(nodes * dim, 0.f);
  t.hi.assign(nodes * dim, 0.f);
  t.begin.assign(nodes, 0);
  t.end.assign(nodes, 0);

  t.index = str_order(points, n, dim, fanout);
  t.points.resize(std::size_t(n) * dim);
  for (std::int64_t i = 0; i < n; ++i)
    std::copy_n(points + std::size_t(t.index[i]) * dim, dim, &t.points[std::size_t(i) * dim]);
  for (std::int64_t leaf = 0; leaf < t.shape.leaves(); ++leaf) {
    t.begin[leaf] = std::int32_t(leaf * fanout);
    t.end[leaf] = std::int32_t(std::min(n, (leaf + 1) * fanout));
    box_of_rows(t, leaf, t.points.data(), t.begin[leaf], t.end[leaf], false);
  }

  for (int level = 1; level < t.shape.levels(); ++level) {
    const std::int64_t first = t.shape.level_begin[level - 1];
    const std::int64_t count = t.shape.level_begin[level] - first;
    std::vector<float> keys(std::size_t(count) * dim);
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = t.lo[first * dim + i] + t.hi[first * dim + i];
    const std::vector<std::int32_t> order = str_order(keys.data(), count, dim, fanout);
    // Reorder the children's level; what they point at is unchanged.
    const Tree old = t;
    for (std::int64_t i = 0; i < count; ++i) {
      const std::size_t to = std::size_t(first + i), from = std::size_t(first + order[i]);
      std::copy_n(&old.lo[from * dim], dim, &t.lo[to * dim]);
      std::copy_n(&old.hi[from * dim], dim, &t.hi[to * dim]);
      t.begin[to] = old.begin[from];
      t.end[to] = old.end[from];
    }
    for (std::int64_t g = 0; g < t.shape.level_begin[level + 1] - t.shape.level_begin[level]; ++g) {
      const std::int64_t node = t.shape.level_begin[level] + g;
      t.begin[node] = std::int32_t(first + g * fanout);
      t.end[node] = std::int32_t(first + std::min(count, (g + 1) * fanout));
      box_of_rows(t, node, nullptr, t.begin[node], t.end[node], true);
    }
  }
  return t;
}

}  // namespace knn::str
