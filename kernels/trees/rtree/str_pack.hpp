#pragma once
// Sort-Tile-Recursive (STR) packing of an R-tree (seed 003's index), shared by the host reference
// builder (str_pack.cpp) and the GPU builder (str_pack.cu), which must produce the same tree.
//
// One level packs `count` items (points, or the nodes of the level below by the sum lo + hi of
// their box) into ceil(count / fanout) groups: `sort_dims` = min(dim, floor(log2(groups)))
// dimensions are in play, cut into S_0, S_1, ... slabs (2 each, then one more for dimension 0, 1,
// ... in turn until the product reaches the group count), and pass d (0-based) stably sorts every
// run of fanout · S_d · S_(d+1) ··· consecutive items by coordinate d. Pass 0 sorts
// everything by dimension 0, each later pass sorts inside the slabs the previous pass cut, and the
// final order is cut into runs of `fanout`. The stable sort key is (segment, orderable bits of the
// coordinate), so host and GPU sorts give the same permutation.
//
// The tree is stored bottom-up: nodes [level_begin[l], level_begin[l + 1]) form level l (0: the
// leaves), the root is the last node. Node i has a box lo[i·dim ..], hi[i·dim ..] and a child range
// [begin[i], end[i]): positions in the packed points for a leaf, node ids of level l - 1 otherwise.
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__CUDACC__)
#define KNN_STR_FN __host__ __device__ __forceinline__
#else
#define KNN_STR_FN inline
#endif

namespace knn::str {

inline constexpr int kMinFanout = 16;
inline constexpr int kMaxFanout = 64;

// Orderable unsigned bits of a float: a < b (as floats, -0 == +0) iff bits(a) < bits(b). NaN is not
// expected in the inputs (it would sort past +inf).
KNN_STR_FN std::uint32_t orderable_bits(float f) {
  if (f == 0.f) f = 0.f;  // -0 and +0 are one key
#if defined(__CUDA_ARCH__)
  const std::uint32_t u = __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
#endif
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// The plan of one level's passes: nothing to sort when the level is a single group.
struct LevelPlan {
  std::int64_t count = 0;   // items
  std::int64_t groups = 0;  // ceil(count / fanout): the nodes this level makes
  int sort_dims = 0;        // passes (dimensions 0 .. sort_dims - 1)
  // segment[d]: items per segment in pass d (>= count means one segment).
  std::vector<std::int64_t> segment;
};

LevelPlan plan_level(std::int64_t count, int dim, int fanout);

// The smaller of two coordinates as both builders take it (no fmin: the same answer for -0 / +0).
KNN_STR_FN float coord_min(float a, float b) { return b < a ? b : a; }
KNN_STR_FN float coord_max(float a, float b) { return a < b ? b : a; }

// The whole tree's shape, which follows from (n, fanout) alone: the GPU builder enqueues every level
// without asking the device for a count.
struct Shape {
  int dim = 0, fanout = 0;
  std::int64_t n = 0;
  std::vector<std::int64_t> level_begin;  // levels + 1 entries; level_begin.back() = node count
  int levels() const { return int(level_begin.size()) - 1; }
  std::int64_t nodes() const { return level_begin.back(); }
  std::int64_t leaves() const { return level_begin[1]; }
  std::int64_t root() const { return nodes() - 1; }
};

// Throws std::invalid_argument naming the value when n < 1, dim < 1 or fanout is outside
// [kMinFanout, kMaxFanout].
Shape plan_tree(std::int64_t n, int dim, int fanout);

// A packed tree in host memory (the GPU builder's result is downloaded into the same layout).
struct Tree {
  Shape shape;
  std::vector<float> points;         // n rows of dim floats, in leaf order
  std::vector<std::int32_t> index;   // original row of each packed point
  std::vector<float> lo, hi;         // nodes × dim
  std::vector<std::int32_t> begin, end;
};

// The STR permutation of `count` items of `dim` keys each (row-major): order[i] = the item at
// position i. The host reference of one level's passes.
std::vector<std::int32_t> str_order(const float* keys, std::int64_t count, int dim, int fanout);

// Packs n points (row-major, n × dim) on the host.
Tree build_host(const float* points, std::int64_t n, int dim, int fanout);

}  // namespace knn::str

#undef KNN_STR_FN
