// p-nanoflann: nanoflann's kd-tree (KDTreeSingleIndexAdaptor, L2_Simple_Adaptor, the library's
// default leaves of at most 10 points) as a peer. build() builds the index (nanoflann 1.4 builds on
// one thread); query() answers one query per OpenMP iteration with knnSearch, as v10 does. Its
// float arithmetic is the seeds' ((q − r)² summed in dimension order); ties come out in nanoflann's
// order and are put in knnbench's (ties by the smaller index). Self-joins: topk + 1 searched, the
// point itself dropped (the CPU trees' instance does both).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "kernels/peers/peers.hpp"

#ifndef KNN_HAVE_NANOFLANN
#define KNN_HAVE_NANOFLANN 0  // cmake/peers.cmake sets it
#endif
#if KNN_HAVE_NANOFLANN
#include <nanoflann.hpp>

#include "kernels/trees/common/cpu_tree.hpp"
#endif

namespace {

#if KNN_HAVE_NANOFLANN
constexpr int kLeafSize = 10;  // nanoflann's default leaf_max_size

// nanoflann's dataset interface over the problem's row-major references (not copied).
struct Rows {
  const float* data = nullptr;
  std::size_t count = 0;
  int dim = 0;
  std::size_t kdtree_get_point_count() const { return count; }
  float kdtree_get_pt(std::uint32_t i, std::size_t t) const { return data[std::size_t(i) * dim + t]; }
  template <class Box>
  bool kdtree_get_bbox(Box&) const { return false; }  // nanoflann computes it
};

using Index = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<float, Rows, float, std::uint32_t>, Rows, -1, std::uint32_t>;

// Movable and empty until built: the index holds a reference to `rows`, so both live on the heap.
struct Tree {
  std::unique_ptr<Rows> rows;
  std::unique_ptr<Index> index;
};

Tree build(const knn::Problem& p, int /*threads: nanoflann 1.4 builds on one*/) {
  Tree t;
  t.rows = std::make_unique<Rows>(Rows{p.references, std::size_t(p.n), p.dim});
  t.index = std::make_unique<Index>(p.dim, *t.rows, nanoflann::KDTreeSingleIndexAdaptorParams(kLeafSize));
  return t;
}

void search(const Tree& t, const float* query, int topk, std::int32_t* indices, float* distances) {
  thread_local std::vector<std::uint32_t> found;
  found.resize(std::size_t(topk));
  const std::size_t n = t.index->knnSearch(query, std::size_t(topk), found.data(), distances);
  for (std::size_t j = 0; j < std::size_t(topk); ++j) indices[j] = j < n ? std::int32_t(found[j]) : -1;
  // Equal distances: the smaller index first (nanoflann keeps them in the order it met them).
  const knn::Problem row{1, 1, 1, topk};
  knn::peers::order_ties(row, knn::Neighbors{indices, distances});
}
#endif

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "p-nanoflann";
#if KNN_HAVE_NANOFLANN
  d.title = "nanoflann " + std::to_string(NANOFLANN_VERSION >> 8) + "." + std::to_string((NANOFLANN_VERSION >> 4) & 0xf) + "." +
            std::to_string(NANOFLANN_VERSION & 0xf) + " kd-tree (10-point leaves, one-thread build, OpenMP queries)";
#else
  d.title = "nanoflann kd-tree (not built: nanoflann was not found)";
#endif
  d.family = knn::Family::peer;
  d.has_build = true;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment&) -> std::optional<std::string> {
    if (auto why = knn::peers::unless_built(KNN_HAVE_NANOFLANN, "nanoflann", "apt-get install libnanoflann-dev, or scripts/setup/install-deps.sh"))
      return why;
    if (p.n < 1) return std::string("kd-tree needs at least one reference point");
    return std::nullopt;
  };
  // The index: a permutation of the n references (4 bytes each) and about 2n/10 nodes of at most
  // 56 bytes; a self-join's widened answers.
  d.host_bytes = [](const knn::Problem& p, const knn::Environment&) {
    return std::size_t(p.n) * 16 + (p.self_join ? 8 * std::size_t(p.m) * (p.topk + 1) : 0);
  };
#if KNN_HAVE_NANOFLANN
  d.make = [] { return knn::tree::make_cpu_tree("p-nanoflann", build, search); };
#else
  d.make = knn::query_only([](const knn::Problem&, knn::Neighbors, knn::RunContext&) {  // supports() skips first
    throw std::runtime_error(knn::peers::built_without("nanoflann", "apt-get install libnanoflann-dev"));
  });
#endif
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
