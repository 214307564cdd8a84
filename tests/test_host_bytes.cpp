// The CPU trees' declared working memory (VersionDesc::host_bytes) covers what their trees really
// hold: the harness skips a case on this estimate, so an estimate under the truth would let a case
// through that then runs out of memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/registry.hpp"
#include "data.hpp"
#include "kernels/trees/kdtree/kdtree.hpp"
#include "kernels/trees/octree/octree.hpp"

namespace {

template <class T>
std::size_t bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

std::vector<float> points(int dim, int n, knn::Distribution dist) {
  std::vector<float> out(std::size_t(n) * dim);
  knn::generate_points(dist, 7, knn::PointSet::references, dim, std::size_t(n), out.data());
  return out;
}

}  // namespace

TEST(HostBytes, TheKdTreeEstimateCoversTheTree) {
  const knn::VersionDesc* v = knn::Registry::instance().find("v10");
  ASSERT_TRUE(v && v->host_bytes);
  for (const int n : {1, 17, 1000, 40000})
    for (const int dim : {1, 3, 16}) {
      const auto refs = points(dim, n, knn::Distribution::clusters);
      const knn::Problem p{dim, 1, n, 1, refs.data(), refs.data(), false};
      const knn::tree::KdTree t = knn::tree::build_kdtree(refs.data(), n, dim, 16, 1);
      const std::size_t real = bytes(t.split_dim) + bytes(t.split_value) + bytes(t.box_lo) + bytes(t.box_hi) + bytes(t.min_index) +
                               bytes(t.leaf_begin) + bytes(t.points) + bytes(t.index);
      const std::size_t said = v->host_bytes(p, knn::Environment{});
      EXPECT_GE(said, real) << "n " << n << " k " << dim;
      EXPECT_LE(said, 3 * real + 4096) << "n " << n << " k " << dim << ": an estimate this far over skips cases that fit";
    }
}

TEST(HostBytes, TheOctreeEstimateCoversTheTree) {
  const knn::VersionDesc* v = knn::Registry::instance().find("v12");
  ASSERT_TRUE(v && v->host_bytes);
  for (const int n : {1, 33, 1000, 40000})
    for (const auto dist : {knn::Distribution::uniform, knn::Distribution::clusters, knn::Distribution::duplicates}) {
      const auto refs = points(3, n, dist);
      const knn::Problem p{3, 1, n, 1, refs.data(), refs.data(), false};
      const knn::tree::Octree t = knn::tree::build_octree(refs.data(), n, 32, 1);
      const std::size_t real = bytes(t.nodes) + bytes(t.min_index) + bytes(t.points) + bytes(t.index);
      EXPECT_GE(v->host_bytes(p, knn::Environment{}), real) << "n " << n << " " << knn::to_string(dist);
    }
}

// The GPU trees build the same trees on the host before uploading them (v11: 16- or 32-point
// leaves, v13: 32-point leaves), so they declare the same host estimate; CUDA builds only.
TEST(HostBytes, TheGpuTreesDeclareTheirHostBuiltTrees) {
  const knn::VersionDesc* v11 = knn::Registry::instance().find("v11");
  const knn::VersionDesc* v13 = knn::Registry::instance().find("v13");
  if (!v11 && !v13) GTEST_SKIP() << "built without CUDA: v11 and v13 are not registered";
  for (const int n : {1, 1000, 40000}) {
    const auto refs = points(3, n, knn::Distribution::clusters);
    const knn::Problem p{3, 1, n, 1, refs.data(), refs.data(), false};
    if (v11) {
      ASSERT_TRUE(v11->host_bytes);
      const knn::tree::KdTree t = knn::tree::build_kdtree(refs.data(), n, 3, 16, 1);
      const std::size_t real = bytes(t.split_dim) + bytes(t.split_value) + bytes(t.box_lo) + bytes(t.box_hi) +
                               bytes(t.min_index) + bytes(t.leaf_begin) + bytes(t.points) + bytes(t.index);
      EXPECT_GE(v11->host_bytes(p, knn::Environment{}), real) << "v11 n " << n;
    }
    if (v13) {
      ASSERT_TRUE(v13->host_bytes);
      const knn::tree::Octree t = knn::tree::build_octree(refs.data(), n, 32, 1);
      EXPECT_GE(v13->host_bytes(p, knn::Environment{}), bytes(t.nodes) + bytes(t.min_index) + bytes(t.points) + bytes(t.index))
          << "v13 n " << n;
    }
  }
}
