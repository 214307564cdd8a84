// v12: octree on the CPU, k = 3 only. build(): cells split into up to 8 children around the centre
// of their points' bounding box, level by level (the cells of a level in parallel), down to leaves
// of at most 32 points; rows copied into leaf order; tight box per node. query(): one query per
// OpenMP iteration; children are visited nearest box first and skipped once their box is farther
// than the current worst (distance, index) pair. Exact for any topk, v0's tie rule included.
#include <omp.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/common/octree.hpp"
#include "kernels/common/tree_threads.hpp"
#include "core/registry.hpp"

namespace {

constexpr int kLeafSize = 32;

constexpr int kParallelQueries = 32;  // fewer queries run on one thread: waking a team costs more

class OctreeCpu final : public knn::VersionInstance {
 public:
  void build(const knn::Problem& p, knn::RunContext& ctx) override {
    if (p.dim != 3) throw std::invalid_argument("v12: octree needs k = 3");
    tree_ = knn::tree::build_octree(p.references, p.n, kLeafSize, knn::tree::tree_threads(ctx.env));
    built_ = true;
  }

  void query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) override {
    if (!built_) throw std::logic_error("v12: query() before build()");
    const knn::tree::Octree& tree = tree_;
    const int threads = knn::tree::tree_threads(ctx.env, p.m, kParallelQueries);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16) default(none) shared(tree, p, out)
    for (int q = 0; q < p.m; ++q) {
      const std::size_t row = std::size_t(q) * std::size_t(p.topk);
      knn::tree::octree_search(tree, p.queries + std::size_t(q) * 3, p.topk, out.indices + row, out.distances + row);
    }
  }

 private:
  knn::tree::Octree tree_;
  bool built_ = false;
};

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v12";
  d.title = "octree on the CPU (k = 3, 32-point leaves, OpenMP build and queries)";
  d.family = knn::Family::tree;
  d.gpus = knn::GpuNeed::none;
  d.has_build = true;
  d.supports = [](const knn::Problem& p, const knn::Environment&) -> std::optional<std::string> {
    if (p.dim != 3) return std::string("octree needs k = 3");
    if (p.n < 1) return std::string("octree needs at least one reference point");
    return std::nullopt;
  };
  d.make = [] { return std::make_unique<OctreeCpu>(); };
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
