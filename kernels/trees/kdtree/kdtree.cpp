// kd-tree construction and the host search (v10); v11 uploads the same arrays.
#include "kernels/trees/kdtree/kdtree.hpp"

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/topk.hpp"
#include "kernels/trees/common/tree_topk.hpp"

namespace knn::tree {

namespace {

// One reference during the build: its key in the dimension being split (high 32 bits, mapped so
// that unsigned order is float order) and its original index (low 32 bits). One 64-bit compare
// then orders by (key, index), which keeps the partition deterministic among equal keys.
using Item = std::uint64_t;
inline std::uint32_t ordered_bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
inline float key_value(Item item) {
  std::uint32_t b = std::uint32_t(item >> 32);
  b = (b & 0x80000000u) ? (b & 0x7fffffffu) : ~b;
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
inline std::int32_t item_index(Item item) { return std::int32_t(std::uint32_t(item)); }
inline Item make_item(float key, std::int32_t index) {
  return (Item(ordered_bits(key)) << 32) | std::uint32_t(index);
}

// Puts the k-th smallest of a[0, n) at a[k], smaller ones before it, larger ones after. Items are
// distinct (the index is part of each), so a median-of-3 pivot always splits off at least one
// item. The partition is branch-free (a swap on every item, the boundary advanced by the compare
// result), about 2.5x faster than std::nth_element on random keys; after too many rounds (an
// adversarial order) it hands the rest to std::nth_element, keeping O(n log n) in the worst case.
void select_nth(Item* a, int n, int k) {
  int lo = 0, hi = n, rounds = 0;
  while (hi - lo > 24) {
    if (++rounds > 64) {
      std::nth_element(a + lo, a + k, a + hi);
      return;
    }
    const Item x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
    const Item pivot = std::max(std::min(x, y), std::min(std::max(x, y), z));
    int first = lo;
    for (int i = lo; i < hi; ++i) {
      const Item v = a[i];
      const bool smaller = v < pivot;
      a[i] = a[first];
      a[first] = v;
      first += smaller;
    }
    if (k < first)
      hi = first;
    else
      lo = first;
  }
  std::sort(a + lo, a + hi);
}

constexpr int kTaskCutoff = 1 << 13;  // subtrees smaller than this stay in their parent's task
constexpr int kParallelRows = 1 << 14;  // smaller trees build on one thread: waking a team costs more
constexpr int kSpreadSamples = 256;   // rows sampled to pick the split dimension of a large node

struct BuildContext {
  const float* references;
  int dim;
  KdTree* tree;
  Item* items;
};

// Dimension of largest spread (max - min) over the node's rows; sampled evenly for large nodes,
// which only affects the quality of the split, never correctness.
int widest_dimension(BuildContext c, int begin, int end) {
  const int count = end - begin;
  const int step = count > 2 * kSpreadSamples ? count / kSpreadSamples : 1;
  int best_dim = 0;
  float best_spread = -1.f;
  for (int t = 0; t < c.dim; ++t) {
    float lo = std::numeric_limits<float>::infinity(), hi = -lo;
    for (int i = begin; i < end; i += step) {
      const float v = c.references[std::size_t(item_index(c.items[i])) * c.dim + t];
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const float spread = hi - lo;
    if (spread > best_spread) {
      best_spread = spread;
      best_dim = t;
    }
  }
  return best_dim;
}

// Splits node `node` (rows [begin, end) of the item array) and recurses. Recursion is host-only
// and bounded by the tree depth (<= kKdMaxDepth).
void build_node(BuildContext c, int node, int level, int begin, int end) {
  KdTree& t = *c.tree;
  if (level == t.depth) {
    t.leaf_begin[std::size_t(node - t.internal_count())] = begin;
    return;
  }
  const int d = widest_dimension(c, begin, end);
  for (int i = begin; i < end; ++i) {
    const std::int32_t index = item_index(c.items[i]);
    c.items[i] = make_item(c.references[std::size_t(index) * c.dim + d], index);
  }
  const int mid = begin + (end - begin) / 2;
  select_nth(c.items + begin, end - begin, mid - begin);
  t.split_dim[std::size_t(node)] = d;
  t.split_value[std::size_t(node)] = key_value(c.items[mid]);
  if (end - begin > kTaskCutoff) {
#pragma omp task default(none) firstprivate(c, node, level, begin, mid)
    build_node(c, 2 * node + 1, level + 1, begin, mid);
  } else {
    build_node(c, 2 * node + 1, level + 1, begin, mid);
  }
  build_node(c, 2 * node + 2, level + 1, mid, end);
}

// Unions the boxes of nodes a and b into node out.
void union_boxes(KdTree& t, int out, int a, int b) {
  const std::size_t dim = std::size_t(t.dim);
  for (std::size_t k = 0; k < dim; ++k) {
    t.box_lo[out * dim + k] = std::min(t.box_lo[a * dim + k], t.box_lo[b * dim + k]);
    t.box_hi[out * dim + k] = std::max(t.box_hi[a * dim + k], t.box_hi[b * dim + k]);
  }
  t.min_index[std::size_t(out)] = std::min(t.min_index[std::size_t(a)], t.min_index[std::size_t(b)]);
}

}  // namespace

KdTree build_kdtree(const float* references, int n, int dim, int max_leaf_size, int threads) {
  if (n < 1 || dim < 1) throw std::invalid_argument("kd-tree: needs n >= 1 and dim >= 1");
  if (max_leaf_size < 2) throw std::invalid_argument("kd-tree: leaf size must be at least 2");
  threads = n >= kParallelRows ? std::max(1, threads) : 1;

  KdTree t;
  t.dim = dim;
  t.n = n;
  // Smallest depth whose leaves hold at most max_leaf_size points.
  while (((std::int64_t(n) + (std::int64_t(1) << t.depth) - 1) >> t.depth) > max_leaf_size) ++t.depth;
  if (t.depth > kKdMaxDepth)
    throw std::invalid_argument("kd-tree: depth " + std::to_string(t.depth) + " exceeds the limit of " +
                                std::to_string(kKdMaxDepth));

  const std::size_t internal = std::size_t(t.internal_count());
  const std::size_t nodes = std::size_t(t.node_count());
  const std::size_t leaves = std::size_t(t.leaf_count());
  t.split_dim.assign(internal, 0);
  t.split_value.assign(internal, 0.f);
  t.leaf_begin.assign(leaves + 1, n);
  t.box_lo.resize(nodes * std::size_t(dim));
  t.box_hi.resize(nodes * std::size_t(dim));
  t.min_index.resize(nodes);
  t.points.resize(std::size_t(n) * std::size_t(dim));
  t.index.resize(std::size_t(n));

  std::vector<Item> items(static_cast<std::size_t>(n));
  const BuildContext c{references, dim, &t, items.data()};

#pragma omp parallel num_threads(threads) default(none) shared(items, n, c)
  {
#pragma omp for schedule(static)
    for (int i = 0; i < n; ++i) items[std::size_t(i)] = Item(std::uint32_t(i));
#pragma omp single
    build_node(c, 0, 0, 0, n);
  }

  // Rows into leaf order; leaf boxes; then internal boxes level by level, bottom-up.
  const std::size_t row_bytes = std::size_t(dim) * sizeof(float);
  const int leaf_count = t.leaf_count();
  const int first_leaf = t.internal_count();
#pragma omp parallel num_threads(threads) default(none) shared(t, items, references, n, dim, row_bytes, leaf_count, first_leaf)
  {
#pragma omp for schedule(static)
    for (int i = 0; i < n; ++i) {
      const std::int32_t src = item_index(items[std::size_t(i)]);
      t.index[std::size_t(i)] = src;
      std::memcpy(&t.points[std::size_t(i) * dim], references + std::size_t(src) * dim, row_bytes);
    }
#pragma omp for schedule(static)
    for (int j = 0; j < leaf_count; ++j) {
      const std::size_t node = std::size_t(first_leaf + j);
      float* lo = &t.box_lo[node * dim];
      float* hi = &t.box_hi[node * dim];
      std::fill(lo, lo + dim, std::numeric_limits<float>::infinity());
      std::fill(hi, hi + dim, -std::numeric_limits<float>::infinity());
      std::int32_t min_index = std::numeric_limits<std::int32_t>::max();
      for (int r = t.leaf_begin[std::size_t(j)]; r < t.leaf_begin[std::size_t(j) + 1]; ++r) {
        const float* row = &t.points[std::size_t(r) * dim];
        for (int k = 0; k < dim; ++k) {
          lo[k] = std::min(lo[k], row[k]);
          hi[k] = std::max(hi[k], row[k]);
        }
        min_index = std::min(min_index, t.index[std::size_t(r)]);
      }
      t.min_index[node] = min_index;
    }
    for (int level = t.depth - 1; level >= 0; --level) {
      const int first = (1 << level) - 1, last = (2 << level) - 1;
#pragma omp for schedule(static)
      for (int node = first; node < last; ++node) union_boxes(t, node, 2 * node + 1, 2 * node + 2);
    }
  }
  return t;
}

namespace {

// DIM > 0: the dimension is a compile-time constant (loops unroll); 0: t.dim at run time.
template <int DIM>
void search(const KdTree& t, const float* query, int topk, std::int32_t* out_indices, float* out_distances) {
  const int dim = DIM > 0 ? DIM : t.dim;
  const float margin = lower_bound_margin(dim);
  const int first_leaf = t.internal_count();
  RowTopK top(out_indices, out_distances, topk);

  struct Entry {
    int node;
    float bound;
  };
  Entry stack[kKdMaxDepth + 1];
  int size = 0;
  stack[size++] = Entry{0, 0.f};
  while (size > 0) {
    const Entry e = stack[--size];
    if (can_prune(e.bound, t.min_index[std::size_t(e.node)], top.worst_distance(), top.worst_index())) continue;
    int node = e.node;
    // Descend to the leaf on the query's side of each split; push the other side unless even its
    // split plane, then its tight box, is already too far.
    while (node < first_leaf) {
      const float diff = query[t.split_dim[std::size_t(node)]] - t.split_value[std::size_t(node)];
      const int left = 2 * node + 1;
      const int near = diff < 0.f ? left : left + 1;
      const int far = diff < 0.f ? left + 1 : left;
      const float worst_d = top.worst_distance();
      const std::int32_t worst_i = top.worst_index();
      const std::int32_t far_min = t.min_index[std::size_t(far)];
      if (!can_prune(diff * diff * margin, far_min, worst_d, worst_i)) {
        const std::size_t box = std::size_t(far) * dim;
        const float bound = box_distance(query, &t.box_lo[box], &t.box_hi[box], dim) * margin;
        if (!can_prune(bound, far_min, worst_d, worst_i)) stack[size++] = Entry{far, bound};
      }
      node = near;
    }
    const std::size_t box = std::size_t(node) * dim;
    if (node != e.node &&
        can_prune(box_distance(query, &t.box_lo[box], &t.box_hi[box], dim) * margin, t.min_index[std::size_t(node)],
                  top.worst_distance(), top.worst_index()))
      continue;
    const int leaf = node - first_leaf;
    const int end = t.leaf_begin[std::size_t(leaf) + 1];
    for (int r = t.leaf_begin[std::size_t(leaf)]; r < end; ++r) {
      const float d = squared_distance(query, &t.points[std::size_t(r) * dim], dim);
      if (d <= top.worst_distance()) top.offer(d, t.index[std::size_t(r)]);
    }
  }
  top.finish();
}

}  // namespace

void kdtree_search(const KdTree& tree, const float* query, int topk, std::int32_t* out_indices,
                   float* out_distances) {
  switch (tree.dim) {
    case 2: search<2>(tree, query, topk, out_indices, out_distances); break;
    case 3: search<3>(tree, query, topk, out_indices, out_distances); break;
    case 4: search<4>(tree, query, topk, out_indices, out_distances); break;
    case 8: search<8>(tree, query, topk, out_indices, out_distances); break;
    case 16: search<16>(tree, query, topk, out_indices, out_distances); break;
    default: search<0>(tree, query, topk, out_indices, out_distances); break;
  }
}

std::string kdtree_check(const KdTree& t, const float* references) {
  const std::size_t dim = std::size_t(t.dim);
  if (t.depth < 0 || t.depth > kKdMaxDepth) return "depth out of range";
  if (t.leaf_begin.size() != std::size_t(t.leaf_count()) + 1 || t.leaf_begin.front() != 0 ||
      t.leaf_begin.back() != t.n)
    return "leaf offsets do not cover the rows";
  // Leaves hold floor or ceil of n / 2^depth rows.
  const int small = t.n >> t.depth, large = small + ((t.n & ((1 << t.depth) - 1)) != 0);
  for (int j = 0; j < t.leaf_count(); ++j) {
    const int size = t.leaf_begin[std::size_t(j) + 1] - t.leaf_begin[std::size_t(j)];
    if (size != small && size != large) return "leaf " + std::to_string(j) + " has " + std::to_string(size) + " rows";
  }
  std::vector<char> seen(std::size_t(t.n), 0);
  for (int r = 0; r < t.n; ++r) {
    const std::int32_t i = t.index[std::size_t(r)];
    if (i < 0 || i >= t.n || seen[std::size_t(i)]) return "index is not a permutation";
    seen[std::size_t(i)] = 1;
    if (std::memcmp(&t.points[std::size_t(r) * dim], references + std::size_t(i) * dim, dim * sizeof(float)) != 0)
      return "row " + std::to_string(r) + " is not reference " + std::to_string(i);
  }
  // Each node: the rows of its subtree lie in its box, the box is tight, min_index is exact, and
  // an internal node's split separates its children.
  for (int node = 0; node < t.node_count(); ++node) {
    int level = 0;
    while (node >= (2 << level) - 1) ++level;
    const int first = node - ((1 << level) - 1);  // position within its level
    const int span = 1 << (t.depth - level);      // leaves under it
    const int begin = t.leaf_begin[std::size_t(first) * span], end = t.leaf_begin[std::size_t(first + 1) * span];
    std::int32_t min_index = std::numeric_limits<std::int32_t>::max();
    for (std::size_t k = 0; k < dim; ++k) {
      float lo = std::numeric_limits<float>::infinity(), hi = -lo;
      for (int r = begin; r < end; ++r) {
        lo = std::min(lo, t.points[std::size_t(r) * dim + k]);
        hi = std::max(hi, t.points[std::size_t(r) * dim + k]);
      }
      if (lo != t.box_lo[std::size_t(node) * dim + k] || hi != t.box_hi[std::size_t(node) * dim + k])
        return "box of node " + std::to_string(node) + " is not tight";
    }
    for (int r = begin; r < end; ++r) min_index = std::min(min_index, t.index[std::size_t(r)]);
    if (min_index != t.min_index[std::size_t(node)]) return "min_index of node " + std::to_string(node);
    if (node < t.internal_count()) {
      const int d = t.split_dim[std::size_t(node)];
      const float v = t.split_value[std::size_t(node)];
      const int mid = t.leaf_begin[std::size_t(first) * span + span / 2];
      if (mid - begin != (end - begin) / 2) return "node " + std::to_string(node) + " is not split at the median";
      for (int r = begin; r < end; ++r) {
        const float key = t.points[std::size_t(r) * dim + std::size_t(d)];
        if ((r < mid && key > v) || (r >= mid && key < v))
          return "split of node " + std::to_string(node) + " does not separate its children";
      }
    }
  }
  return {};
}

}  // namespace knn::tree
