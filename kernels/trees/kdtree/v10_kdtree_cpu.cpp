// v10: kd-tree on the CPU. build(): median splits on the dimension of largest spread down to
// leaves of at most 16 points, subtrees built as OpenMP tasks; rows copied into leaf order; tight
// boxes per node. query(): one query per OpenMP iteration; each descends to its own leaf and
// backtracks only into subtrees whose split plane and tight box are within the current worst
// (distance, index) pair. Exact for any topk, v0's tie rule included.
#include <cstdint>
#include <optional>
#include <string>

#include "core/registry.hpp"
#include "kernels/trees/common/cpu_tree.hpp"
#include "kernels/trees/kdtree/kdtree.hpp"

namespace {

constexpr int kLeafSize = 16;

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v10";
  d.title = "kd-tree on the CPU (median splits, 16-point leaves, OpenMP build and queries)";
  d.family = knn::Family::tree;
  d.gpus = knn::GpuNeed::none;
  d.has_build = true;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment&) -> std::optional<std::string> {
    if (p.n < 1) return std::string("kd-tree needs at least one reference point");
    return std::nullopt;
  };
  // The tree and a self-join's widened answers.
  d.host_bytes = [](const knn::Problem& p, const knn::Environment&) {
    return knn::tree::kdtree_host_bytes(std::size_t(p.n), std::size_t(p.dim)) +
           (p.self_join ? 8 * std::size_t(p.m) * (p.topk + 1) : 0);
  };
  d.make = [] {
    return knn::tree::make_cpu_tree(
        "v10",
        [](const knn::Problem& p, int threads) {
          return knn::tree::build_kdtree(p.references, p.n, p.dim, kLeafSize, threads);
        },
        [](const knn::tree::KdTree& tree, const float* query, int topk, std::int32_t* indices, float* distances) {
          knn::tree::kdtree_search(tree, query, topk, indices, distances);
        });
  };
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
