#pragma once
// The leaf plan of a balanced GPU kd-tree (v16, after seed 004): the references are padded so that
// every leaf holds the same number of rows and the leaves are a power of two, which makes the tree
// an implicit complete binary tree (node v has children 2v + 1 and 2v + 2) and lets every thread of
// a warp scan its leaf in the same number of steps. The rule: the most leaves L = 2^levels with
// L * min_leaf <= n, leaf size S = ceil(n / L), so S >= min_leaf and the padding L * S - n is
// smaller than L (fewer padding rows than leaves). With n < min_leaf the tree is one leaf of n rows.
// `multiple` > 1 rounds S up to a multiple of it (v16.tc scans whole 8-row groups): the padding is then
// below multiple x L. Host code only: the CPU tests check the rule.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace knn::kd {

struct LeafPlan {
  std::int64_t n = 0;          // real rows
  std::int64_t leaves = 1;     // a power of two
  std::int64_t leaf_size = 0;  // rows per leaf, padding included
  int levels = 0;              // log2(leaves): internal levels above the leaves

  std::int64_t padded() const { return leaves * leaf_size; }
  std::int64_t padding() const { return padded() - n; }
  std::int64_t nodes() const { return 2 * leaves - 1; }  // heap order, the leaves last
};

inline LeafPlan plan_leaves(std::int64_t n, std::int64_t min_leaf, std::int64_t multiple = 1) {
  if (n < 1) throw std::invalid_argument(fmt::format("kd-tree leaf plan: n = {}: needs at least one point", n));
  if (min_leaf < 1) throw std::invalid_argument(fmt::format("kd-tree leaf plan: minimum leaf size {} < 1", min_leaf));
  if (multiple < 1) throw std::invalid_argument(fmt::format("kd-tree leaf plan: leaf multiple {} < 1", multiple));
  LeafPlan p;
  p.n = n;
  while (p.leaves * 2 * min_leaf <= n) {
    p.leaves *= 2;
    ++p.levels;
  }
  p.leaf_size = (n + p.leaves - 1) / p.leaves;
  p.leaf_size = (p.leaf_size + multiple - 1) / multiple * multiple;
  return p;
}

// The minimum leaf: `knob` where set (> 0), else 128 from topk 32 and 256 below (on an H100, 128 gave
// 8-23 % on the top-32 cases 200, 510, 512 and 519, and lost 7 % and 17 % on 405 and 409 at topk 5;
// docs/v16.md).
inline int leaf_for(int knob, int topk) { return knob > 0 ? knob : topk >= 32 ? 128 : 256; }

// The build's levels whose nodes hold at most segment_rows rows (and more than one node) sort each
// node on its own (a segmented sort) instead of one radix sort over all rows.
inline bool segmented_level(std::int64_t padded, int level, std::int64_t segment_rows) {
  return level > 0 && (padded >> level) <= segment_rows;
}

// The build from presorted lists keeps dim lists of padded int32 entries and scans them as one, so
// it needs dim x padded below 2^31.
inline bool lists_fit(int dim, std::int64_t padded) { return std::int64_t(dim) * padded < (std::int64_t(1) << 31); }

// v16.build: "lists", "sort", or "auto": lists up to kListsAutoMaxDim dimensions where they fit.
inline constexpr int kListsAutoMaxDim = 16;
inline bool build_from_lists(std::string_view build, int dim, std::int64_t padded) {
  if (build == "lists") return true;
  return build == "auto" && dim <= kListsAutoMaxDim && lists_fit(dim, padded);
}

// The path's words on the build: from lists, or by a sort per level with the levels sorted node by node.
inline std::string build_text(bool lists, const std::string& build, int dim, const LeafPlan& plan, std::int64_t segment_rows) {
  if (lists) return fmt::format(", built from presorted lists (build={})", build == "auto" ? fmt::format("auto: k <= {}", kListsAutoMaxDim) : build);
  int first = 1;  // the first level sorted node by node, if any
  while (first < plan.levels && !segmented_level(plan.padded(), first, segment_rows)) ++first;
  return fmt::format(", built by a sort per level (build={}){}",
                     build != "auto"              ? build
                     : dim > kListsAutoMaxDim     ? fmt::format("auto: k > {}", kListsAutoMaxDim)
                                                  : std::string("auto: 2^31 list entries or more"),
                     first < plan.levels ? fmt::format(", its levels {}-{} sorted node by node (nodes of at most {} rows)", first, plan.levels - 1,
                                                       segment_rows)
                                         : std::string());
}

}  // namespace knn::kd
