// Octree construction and the host search (v12); v13 uploads the same arrays.
#include "kernels/trees/octree/octree.hpp"

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

constexpr int kDim = 3;
constexpr int kParallelRows = 1 << 14;  // smaller trees build on one thread: waking a team costs more
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Box {
  float lo[kDim] = {kInf, kInf, kInf};
  float hi[kDim] = {-kInf, -kInf, -kInf};
  void add(const float* p) {
    for (int k = 0; k < kDim; ++k) {
      lo[k] = std::min(lo[k], p[k]);
      hi[k] = std::max(hi[k], p[k]);
    }
  }
};

// Octant of point p around centre c: bit k set when p[k] >= c[k].
inline int octant(const float* p, const float* c) {
  return int(p[0] >= c[0]) | (int(p[1] >= c[1]) << 1) | (int(p[2] >= c[2]) << 2);
}

// What processing one cell produced: its non-empty children in octant order (none: a leaf).
struct Split {
  int children = 0;
  int begin[8] = {};
  int size[8] = {};
};

// Where a level reads its rows (src; ids == nullptr means row i is reference i, as at the root)
// and where it scatters its children's rows (dst).
struct Buffers {
  const float* src_rows;
  const std::int32_t* src_ids;
  float* dst_rows;
  std::int32_t* dst_ids;
  std::uint8_t* codes;
};

// Processes node `id` (rows [first, first + count) of the source buffer): stores its tight box,
// then either copies its rows into the tree (a leaf) or scatters them, stably and by octant
// around the box centre, into the same range of the destination buffer.
Split process_cell(const Buffers& b, Octree& t, int id, int level, int max_leaf_size) {
  OctreeNode& node = t.nodes[std::size_t(id)];
  const int begin = node.first, end = node.first + node.count;
  float lo0 = kInf, lo1 = kInf, lo2 = kInf, hi0 = -kInf, hi1 = -kInf, hi2 = -kInf;
  for (int r = begin; r < end; ++r) {
    const float* p = b.src_rows + std::size_t(r) * kDim;
    lo0 = std::min(lo0, p[0]), hi0 = std::max(hi0, p[0]);
    lo1 = std::min(lo1, p[1]), hi1 = std::max(hi1, p[1]);
    lo2 = std::min(lo2, p[2]), hi2 = std::max(hi2, p[2]);
  }
  node.lo[0] = lo0, node.lo[1] = lo1, node.lo[2] = lo2;
  node.hi[0] = hi0, node.hi[1] = hi1, node.hi[2] = hi2;

  Split s;
  auto finish_leaf = [&] {
    std::memcpy(&t.points[std::size_t(begin) * kDim], b.src_rows + std::size_t(begin) * kDim,
                std::size_t(end - begin) * kDim * sizeof(float));
    for (int r = begin; r < end; ++r) t.index[std::size_t(r)] = b.src_ids ? b.src_ids[r] : r;
    return s;
  };
  if (end - begin <= max_leaf_size || level >= kOctreeMaxDepth) return finish_leaf();
  if (lo0 == hi0 && lo1 == hi1 && lo2 == hi2) return finish_leaf();  // all points equal
  const float centre[kDim] = {lo0 * 0.5f + hi0 * 0.5f, lo1 * 0.5f + hi1 * 0.5f, lo2 * 0.5f + hi2 * 0.5f};
  int counts[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int r = begin; r < end; ++r) {
    const int code = octant(b.src_rows + std::size_t(r) * kDim, centre);
    b.codes[r] = std::uint8_t(code);
    ++counts[code];
  }
  int non_empty = 0;
  for (int code = 0; code < 8; ++code) non_empty += counts[code] > 0;
  if (non_empty < 2) return finish_leaf();  // rounding put every point on one side: no progress possible
  int offset[8];
  for (int code = 0, next = begin; code < 8; ++code) {
    if (counts[code] > 0) {
      s.begin[s.children] = next;
      s.size[s.children] = counts[code];
      ++s.children;
    }
    offset[code] = next;
    next += counts[code];
  }
  for (int r = begin; r < end; ++r) {
    const int to = offset[b.codes[r]]++;
    std::memcpy(b.dst_rows + std::size_t(to) * kDim, b.src_rows + std::size_t(r) * kDim, kDim * sizeof(float));
    b.dst_ids[to] = b.src_ids ? b.src_ids[r] : r;
  }
  return s;
}

}  // namespace

Octree build_octree(const float* references, int n, int max_leaf_size, int threads) {
  if (n < 1) throw std::invalid_argument("octree: needs n >= 1");
  if (max_leaf_size < 1) throw std::invalid_argument("octree: leaf size must be at least 1");
  threads = n >= kParallelRows ? std::max(1, threads) : 1;
  const std::size_t floats = std::size_t(n) * kDim;

  Octree t;
  t.n = n;
  t.points.resize(floats);
  t.index.resize(std::size_t(n));
  // The root reads the references; below it, a level reads one buffer and scatters its
  // children's rows into the other.
  std::vector<float> rows[2] = {std::vector<float>(floats), std::vector<float>(floats)};
  std::vector<std::int32_t> ids[2] = {std::vector<std::int32_t>(std::size_t(n)), std::vector<std::int32_t>(std::size_t(n))};
  std::vector<std::uint8_t> codes(static_cast<std::size_t>(n));

  // Level by level: the cells of one level are processed in parallel; child ids are then handed
  // out in order, so the layout does not depend on the thread count.
  t.nodes.push_back(OctreeNode{{0.f, 0.f, 0.f}, 0, {0.f, 0.f, 0.f}, n});
  std::vector<int> level_nodes{0}, next_nodes;
  std::vector<Split> splits;
  for (int level = 0; !level_nodes.empty(); ++level) {
    t.depth = level;
    const int src = level % 2, dst = 1 - src;
    const Buffers buf{level == 0 ? references : rows[src].data(), level == 0 ? nullptr : ids[src].data(),
                      rows[dst].data(), ids[dst].data(), codes.data()};
    if (splits.size() < level_nodes.size()) splits.resize(level_nodes.size());  // every used slot is rewritten
    const int cells = int(level_nodes.size());
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16) default(none) \
    shared(t, buf, splits, level_nodes, cells, level, max_leaf_size)
    for (int i = 0; i < cells; ++i)
      splits[std::size_t(i)] = process_cell(buf, t, level_nodes[std::size_t(i)], level, max_leaf_size);
    next_nodes.clear();
    for (int i = 0; i < cells; ++i) {
      const Split& s = splits[std::size_t(i)];
      if (s.children == 0) continue;  // leaf: first/count already are its rows
      const int id = level_nodes[std::size_t(i)];
      t.nodes[std::size_t(id)].first = int(t.nodes.size());
      t.nodes[std::size_t(id)].count = -s.children;
      for (int c = 0; c < s.children; ++c) {
        next_nodes.push_back(int(t.nodes.size()));
        t.nodes.push_back(OctreeNode{{0.f, 0.f, 0.f}, s.begin[c], {0.f, 0.f, 0.f}, s.size[c]});
      }
    }
    level_nodes.swap(next_nodes);
  }

  // Children come after their parents, so one backward pass fills min_index bottom-up.
  t.min_index.assign(t.nodes.size(), std::numeric_limits<std::int32_t>::max());
  for (std::size_t id = t.nodes.size(); id-- > 0;) {
    const OctreeNode& node = t.nodes[id];
    std::int32_t m = std::numeric_limits<std::int32_t>::max();
    if (node.count > 0) {
      for (int r = node.first; r < node.first + node.count; ++r) m = std::min(m, t.index[std::size_t(r)]);
    } else {
      for (int c = 0; c < -node.count; ++c) m = std::min(m, t.min_index[std::size_t(node.first + c)]);
    }
    t.min_index[id] = m;
  }
  return t;
}

void octree_search(const Octree& t, const float* query, int topk, std::int32_t* out_indices, float* out_distances) {
  const float margin = lower_bound_margin(kDim);
  RowTopK top(out_indices, out_distances, topk);
  const OctreeNode* nodes = t.nodes.data();
  auto bound_of = [&](int id) { return box_distance(query, nodes[id].lo, nodes[id].hi, kDim) * margin; };
  auto scan = [&](const OctreeNode& leaf) {
    for (int r = leaf.first; r < leaf.first + leaf.count; ++r) {
      const float d = squared_distance(query, &t.points[std::size_t(r) * kDim], kDim);
      if (d <= top.worst_distance()) top.offer(d, t.index[std::size_t(r)]);
    }
  };
  if (nodes[0].count > 0) {
    scan(nodes[0]);
    top.finish();
    return;
  }

  // One frame per internal node on the current path: the node and its not yet visited children,
  // nearest box first, as 3-bit child offsets (low bits first) with their number in bits 24-27.
  struct Frame {
    int node;
    std::uint32_t order;
  };
  Frame stack[kOctreeMaxDepth + 1];
  int size = 0;
  auto push = [&](int id) {
    const OctreeNode& node = nodes[id];
    float bound[8];
    int offset[8];
    int kept = 0;
    for (int c = 0; c < -node.count; ++c) {
      const float b = bound_of(node.first + c);
      if (b > top.worst_distance()) continue;
      int pos = kept++;
      while (pos > 0 && bound[pos - 1] > b) {
        bound[pos] = bound[pos - 1];
        offset[pos] = offset[pos - 1];
        --pos;
      }
      bound[pos] = b;
      offset[pos] = c;
    }
    std::uint32_t order = std::uint32_t(kept) << 24;
    for (int i = kept - 1; i >= 0; --i) order |= std::uint32_t(offset[i]) << (3 * i);
    stack[size++] = Frame{id, order};
  };
  push(0);
  while (size > 0) {
    Frame& f = stack[size - 1];
    const std::uint32_t remaining = f.order >> 24;
    if (remaining == 0) {
      --size;
      continue;
    }
    const int child = nodes[f.node].first + int(f.order & 7u);
    f.order = ((remaining - 1) << 24) | ((f.order & 0xffffffu) >> 3);
    const float b = bound_of(child);
    if (b > top.worst_distance()) {  // siblings still to come are at least this far
      --size;
      continue;
    }
    if (can_prune(b, t.min_index[std::size_t(child)], top.worst_distance(), top.worst_index())) continue;
    if (nodes[child].count > 0)
      scan(nodes[child]);
    else
      push(child);
  }
  top.finish();
}

std::string octree_check(const Octree& t, const float* references, int max_leaf_size) {
  const std::size_t count = t.nodes.size();
  if (count == 0) return "no nodes";
  std::vector<int> level(count, 0), begin(count, 0), end(count, 0);
  for (std::size_t id = 0; id < count; ++id) {
    const OctreeNode& node = t.nodes[id];
    if (node.count > 0) continue;
    if (node.count > -2 || node.count < -8) return "node " + std::to_string(id) + " has a bad child count";
    if (node.first <= int(id) || std::size_t(node.first - node.count) > count)
      return "children of node " + std::to_string(id) + " out of range";
    for (int c = 0; c < -node.count; ++c) level[std::size_t(node.first + c)] = level[id] + 1;
  }
  // Row ranges bottom-up: a leaf's own rows; an internal node's children, contiguous and in order.
  for (std::size_t id = count; id-- > 0;) {
    const OctreeNode& node = t.nodes[id];
    if (node.count > 0) {
      begin[id] = node.first;
      end[id] = node.first + node.count;
      continue;
    }
    begin[id] = begin[std::size_t(node.first)];
    end[id] = end[std::size_t(node.first - node.count - 1)];
    for (int c = 1; c < -node.count; ++c)
      if (begin[std::size_t(node.first + c)] != end[std::size_t(node.first + c - 1)])
        return "children of node " + std::to_string(id) + " are not contiguous";
  }
  if (begin[0] != 0 || end[0] != t.n) return "root does not cover every row";
  std::vector<char> seen(std::size_t(t.n), 0);
  for (int r = 0; r < t.n; ++r) {
    const std::int32_t i = t.index[std::size_t(r)];
    if (i < 0 || i >= t.n || seen[std::size_t(i)]) return "index is not a permutation";
    seen[std::size_t(i)] = 1;
    if (std::memcmp(&t.points[std::size_t(r) * kDim], references + std::size_t(i) * kDim, kDim * sizeof(float)) != 0)
      return "row " + std::to_string(r) + " is not reference " + std::to_string(i);
  }
  for (std::size_t id = 0; id < count; ++id) {
    const OctreeNode& node = t.nodes[id];
    if (level[id] > kOctreeMaxDepth || level[id] > t.depth) return "node deeper than the limit";
    Box box;
    std::int32_t min_index = std::numeric_limits<std::int32_t>::max();
    for (int r = begin[id]; r < end[id]; ++r) {
      box.add(&t.points[std::size_t(r) * kDim]);
      min_index = std::min(min_index, t.index[std::size_t(r)]);
    }
    for (int k = 0; k < kDim; ++k)
      if (box.lo[k] != node.lo[k] || box.hi[k] != node.hi[k]) return "box of node " + std::to_string(id) + " is not tight";
    if (min_index != t.min_index[id]) return "min_index of node " + std::to_string(id);
    if (node.count > max_leaf_size && level[id] < kOctreeMaxDepth) {
      // An oversized leaf is only allowed when its points cannot be separated around its centre.
      float centre[kDim];
      for (int k = 0; k < kDim; ++k) centre[k] = node.lo[k] * 0.5f + node.hi[k] * 0.5f;
      const int first = octant(&t.points[std::size_t(node.first) * kDim], centre);
      for (int r = node.first; r < node.first + node.count; ++r)
        if (octant(&t.points[std::size_t(r) * kDim], centre) != first)
          return "leaf " + std::to_string(id) + " is oversized but could be split";
    }
  }
  return {};
}

}  // namespace knn::tree
