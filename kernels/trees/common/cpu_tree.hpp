#pragma once
// The instance the CPU tree versions (v10, v12) share: build() builds the version's tree with the
// run's OpenMP threads, query() answers one query per OpenMP iteration. Each version keeps its
// builder, its search, its constants and its descriptor. Plain C++ (no CUDA headers).
#include <omp.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/registry.hpp"
#include "core/topk.hpp"
#include "kernels/device/tree_threads.hpp"

namespace knn::tree {

// Queries below this many run on one thread: waking a team costs more.
inline constexpr int kParallelQueries = 32;

// build(p, threads) returns the tree; search(tree, query, topk, indices, distances) fills one
// result row.
template <class Build, class Search>
class CpuTreeInstance final : public VersionInstance {
 public:
  using Tree = std::invoke_result_t<const Build&, const Problem&, int>;

  CpuTreeInstance(const char* id, Build build, Search search)
      : id_(id), build_(std::move(build)), search_(std::move(search)) {}

  void build(const Problem& p, RunContext& ctx) override {
    tree_ = build_(p, tree_threads(ctx.env));
    built_ = true;
  }

  void query(const Problem& p, Neighbors out, RunContext& ctx) override {
    if (!built_) throw std::logic_error(std::string(id_) + ": query() before build()");
    if (!p.self_join) return search_rows(p, out, ctx);
    const Problem wide = widened_for_self_join(p);
    std::vector<std::int32_t> indices(wide.result_slots());
    std::vector<float> distances(wide.result_slots());
    search_rows(wide, Neighbors{indices.data(), distances.data()}, ctx);
    drop_self(p, indices.data(), distances.data(), out);
    ctx.path = "self-join: topk + 1 searched, the point itself dropped";
  }

 private:
  void search_rows(const Problem& p, Neighbors out, RunContext& ctx) {
    const Tree& tree = tree_;
    const Search& search = search_;
    const int threads = tree_threads(ctx.env, p.m, kParallelQueries);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 16) default(none) shared(tree, search, p, out)
    for (int q = 0; q < p.m; ++q) {
      const std::size_t row = std::size_t(q) * std::size_t(p.topk);
      search(tree, p.queries + std::size_t(q) * std::size_t(p.dim), p.topk, out.indices + row, out.distances + row);
    }
  }

  const char* id_;
  Build build_;
  Search search_;
  Tree tree_;
  bool built_ = false;
};

// The VersionDesc::make of a CPU tree version.
template <class Build, class Search>
std::unique_ptr<VersionInstance> make_cpu_tree(const char* id, Build build, Search search) {
  return std::make_unique<CpuTreeInstance<Build, Search>>(id, std::move(build), std::move(search));
}

}  // namespace knn::tree
