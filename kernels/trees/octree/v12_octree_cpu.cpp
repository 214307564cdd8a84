// v12: octree on the CPU, k = 3 only. build(): cells split into up to 8 children around the centre
// of their points' bounding box, level by level (the cells of a level in parallel), down to leaves
// of at most 32 points; rows copied into leaf order; tight box per node. query(): one query per
// OpenMP iteration; children are visited nearest box first and skipped once their box is farther
// than the current worst (distance, index) pair. Exact for any topk, v0's tie rule included.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/registry.hpp"
#include "kernels/trees/common/cpu_tree.hpp"
#include "kernels/trees/octree/octree.hpp"

namespace {

constexpr int kLeafSize = 32;

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v12";
  d.title = "octree on the CPU (k = 3, 32-point leaves, OpenMP build and queries)";
  d.family = knn::Family::tree;
  d.gpus = knn::GpuNeed::none;
  d.has_build = true;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment&) -> std::optional<std::string> {
    if (p.dim != 3) return std::string("octree needs k = 3");
    if (p.n < 1) return std::string("octree needs at least one reference point");
    return std::nullopt;
  };
  // The tree and a self-join's widened answers.
  d.host_bytes = [](const knn::Problem& p, const knn::Environment&) {
    return knn::tree::octree_host_bytes(std::size_t(p.n)) + (p.self_join ? 8 * std::size_t(p.m) * (p.topk + 1) : 0);
  };
  d.make = [] {
    return knn::tree::make_cpu_tree(
        "v12",
        [](const knn::Problem& p, int threads) {
          if (p.dim != 3) throw std::invalid_argument("v12: octree needs k = 3");
          return knn::tree::build_octree(p.references, p.n, kLeafSize, threads);
        },
        [](const knn::tree::Octree& tree, const float* query, int topk, std::int32_t* indices, float* distances) {
          knn::tree::octree_search(tree, query, topk, indices, distances);
        });
  };
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
