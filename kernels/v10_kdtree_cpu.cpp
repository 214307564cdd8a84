// v10: kd-tree on the CPU. build(): median splits on the dimension of largest spread down to
// leaves of at most 16 points, subtrees built as OpenMP tasks; rows copied into leaf order; tight
// boxes per node. query(): one query per OpenMP iteration; each descends to its own leaf and
// backtracks only into subtrees whose split plane and tight box are within the current worst
// (distance, index) pair. Exact for any topk, v0's tie rule included.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "kernels/common/kdtree.hpp"
#include "kernels/common/tree_threads.hpp"
#include "core/registry.hpp"

namespace {

constexpr int kLeafSize = 16;

constexpr int kParallelQueries = 32;  // fewer queries run on one thread: waking a team costs more

class KdTreeCpu final : public knn::VersionInstance {
 public:
  void build(const knn::Problem& p, knn::RunContext& ctx) override {
    tree_ = knn::tree::build_kdtree(p.references, p.n, p.dim, kLeafSize, knn::tree::tree_threads(ctx.env));
    built_ = true;
  }

  void query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) override {
    if (!built_) throw std::logic_error("v10: query() before build()");
    const knn::tree::KdTree& tree = tree_;
    const int threads = knn::tree::tree_threads(ctx.env, p.m, kParallelQueries);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16) default(none) shared(tree, p, out)
    for (int q = 0; q < p.m; ++q) {
      const std::size_t row = std::size_t(q) * std::size_t(p.topk);
      knn::tree::kdtree_search(tree, p.queries + std::size_t(q) * std::size_t(p.dim), p.topk, out.indices + row,
                               out.distances + row);
    }
  }

 private:
  knn::tree::KdTree tree_;
  bool built_ = false;
};

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "v10";
  d.title = "kd-tree on the CPU (median splits, 16-point leaves, OpenMP build and queries)";
  d.family = knn::Family::tree;
  d.gpus = knn::GpuNeed::none;
  d.has_build = true;
  d.supports = [](const knn::Problem& p, const knn::Environment&) -> std::optional<std::string> {
    if (p.n < 1) return std::string("kd-tree needs at least one reference point");
    return std::nullopt;
  };
  d.make = [] { return std::make_unique<KdTreeCpu>(); };
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
