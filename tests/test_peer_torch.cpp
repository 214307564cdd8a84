// The PyTorch peers (kernels/peers/p_torch.cpp: p-torch, p-torch-direct, p-torch-cpu) against v0
// through the harness's own measurement and validation: dimensions 1 to 100, odd sizes, topk 1 to n,
// ties, self-joins, the chunked merge (a small block budget), the GEMM recipe's rounding far from the
// origin, and the "built without PyTorch" reason. On the CPU here; GpuPeerTorch runs p-torch and
// p-torch-direct on a GPU (skipped, saying why, where there is none or libtorch has no CUDA).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "devices.hpp"
#include "test_support.hpp"

#ifndef KNN_TEST_HAVE_TORCH
#define KNN_TEST_HAVE_TORCH 0  // cmake/torch.cmake sets it
#endif
#ifndef KNN_TEST_HAVE_TORCH_CUDA
#define KNN_TEST_HAVE_TORCH_CUDA 0
#endif

namespace {

using knn::Distribution;
using knn::Status;
using knn::testing::Dataset;

const std::vector<std::string> kIds{"p-torch", "p-torch-direct", "p-torch-cpu"};
const char* kWithoutTorch =
    "built without PyTorch (install: apt-get install libtorch-dev for the CPU build, or pip install torch and configure "
    "with -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'); then rebuild)";

const knn::VersionDesc& version(const std::string& id) {
  const knn::VersionDesc* v = knn::Registry::instance().find(id);
  if (v == nullptr) throw std::logic_error(id + " is not registered");
  return *v;
}

knn::Environment cpu_env() {
  knn::Environment env;
  env.omp_threads = 2;
  return env;
}

// `env` with peer `id`'s parameters for the call: block_kib = `kib` ("" leaves the default, 0: by device).
knn::Environment with_blocks(knn::Environment env, const std::string& id, const std::string& kib) {
  env.params = knn::testing::params_for(id, kib.empty() ? std::map<std::string, std::string>{}
                                                         : std::map<std::string, std::string>{{"block_kib", kib}});
  return env;
}

void expect_pass(const knn::Result& r, const std::string& label) {
  EXPECT_EQ(r.status, Status::pass) << label << ": " << r.reason << " / " << r.validation.first_problem << "\n" << r.path;
  EXPECT_TRUE(r.validated) << label;
  EXPECT_EQ(r.validation.mismatches, 0) << label;
  EXPECT_EQ(r.validation.invalid, 0) << label;
}

// Whole-number points in [0, max): every squared distance is exact in float in either recipe.
Dataset integers(int dim, int m, int n, int topk, std::uint64_t seed, std::uint32_t max) {
  Dataset d(dim, m, n, topk, Distribution::integers, seed);
  knn::generate_points(Distribution::integers, seed, knn::PointSet::references, dim, std::size_t(n), d.references.data(), max);
  knn::generate_points(Distribution::integers, seed, knn::PointSet::queries, dim, std::size_t(m), d.queries.data(), max);
  return d;
}

Dataset self_join(int dim, int n, int topk, std::uint64_t seed, std::uint32_t max) {
  Dataset d = integers(dim, n, n, topk, seed, max);
  d.problem.queries = d.problem.references;
  d.problem.self_join = true;
  return d;
}

// Eight clusters of 3-D points about 6400 from the origin, 10 wide (uniform offsets: no <random>, so
// the same on every machine): ‖q‖² ≈ 4·10⁷ rounds in float by units, nearest squared distances are ~1.
std::vector<float> far_clusters(int count, knn::PointSet set) {
  std::vector<float> v(std::size_t(count) * 3);
  knn::generate_points(Distribution::uniform, 31, set, 3, std::size_t(count), v.data());
  for (int i = 0; i < count; ++i) {
    const int c = i % 8;
    const float centre[3] = {4000.f + 150.f * c, 500.f - 40.f * c, 4900.f - 90.f * c};
    for (int t = 0; t < 3; ++t) v[std::size_t(i) * 3 + t] = centre[t] + 10.f * (v[std::size_t(i) * 3 + t] - 0.5f);
  }
  return v;
}

// The number before "query chunk(s)" / "reference chunk(s)" in a path.
int chunks(const std::string& path, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(path, m, std::regex("(\\d+) " + what + " chunk"))) return -1;
  return std::stoi(m[1]);
}

// The shapes every strict check runs: name, dataset.
struct Shape {
  std::string name;
  Dataset data;
};

std::vector<Shape> strict_shapes() {
  std::vector<Shape> out;
  // Uniform in [0, 1): the GEMM recipe's rounding (a few ulp of ‖q‖² + ‖r‖²) stays far below the
  // gaps between neighbours here. Dimension 1 takes integers below: its neighbours are closer than that.
  for (int dim : {3, 16, 100})
    for (int topk : {1, 5, 32}) out.push_back({"uniform dim=" + std::to_string(dim) + " topk=" + std::to_string(topk), Dataset(dim, 37, 1001, topk, Distribution::uniform, 11)});
  out.push_back({"uniform m=1", Dataset(16, 1, 513, 7, Distribution::uniform, 12)});
  out.push_back({"uniform topk=n", Dataset(3, 19, 45, 45, Distribution::uniform, 13)});
  // Integers with few values: exact distances, ties everywhere (v0 keeps the smaller index).
  for (int dim : {1, 3, 16, 100})
    for (int topk : {1, 5, 32}) out.push_back({"integers dim=" + std::to_string(dim) + " topk=" + std::to_string(topk), integers(dim, 41, 777, topk, 14, dim == 1 ? 50 : 4)});
  out.push_back({"integers topk=n", integers(2, 23, 61, 61, 15, 5)});
  // Self-joins with duplicates: more than topk others may sit on a point; it must never be answered.
  for (int topk : {1, 6, 31}) out.push_back({"self-join topk=" + std::to_string(topk), self_join(3, 301, topk, 16, 4)});
  out.push_back({"self-join topk=n-1", self_join(2, 40, 39, 17, 3)});
  return out;
}

void check_all_pass(const std::string& id, const knn::Environment& env) {
  for (const Shape& s : strict_shapes()) expect_pass(knn::testing::run_once(version(id), s.data, env), id + " " + s.name);
}

}  // namespace

TEST(PeerTorch, RegisteredAsPeersThatNeedNoGpu) {
  for (const auto& id : kIds) {
    const knn::VersionDesc& v = version(id);
    EXPECT_EQ(v.family, knn::Family::peer) << id;
    EXPECT_EQ(v.gpus, knn::GpuNeed::none) << id;
    EXPECT_TRUE(v.self_join) << id;
    EXPECT_FALSE(v.has_build) << id;
    EXPECT_NE(v.title.find("PyTorch"), std::string::npos) << v.title;
  }
}

// Built without libtorch: the reason, word for word, and the harness's skip with it. Built with it:
// no skip, unless the block_kib parameter leaves no room for one query's lists. Its declaration
// refuses what is not a KiB count in either build.
TEST(PeerTorch, SkipReasonFollowsTheBuild) {
  const Dataset d(3, 20, 100, 4, Distribution::uniform, 3);
  for (const auto& id : kIds) {
    for (const char* bad : {"lots", "-1", "16777217"})
      EXPECT_THROW(knn::testing::params_for(id, {{"block_kib", bad}}), knn::ParamError) << id << " " << bad;
    const auto why = version(id).supports(d.problem, with_blocks(cpu_env(), id, ""));
    if (KNN_TEST_HAVE_TORCH == 0) {
      ASSERT_TRUE(why.has_value()) << id;
      EXPECT_EQ(*why, kWithoutTorch);
      const knn::Result r = knn::testing::run_once(version(id), d, cpu_env());
      EXPECT_EQ(r.status, Status::skip) << id;
      EXPECT_EQ(r.reason, kWithoutTorch) << id;
      continue;
    }
    EXPECT_FALSE(why.has_value()) << id << ": " << why.value_or("");
    const Dataset long_lists(3, 20, 100, 20, Distribution::uniform, 3);  // 20 x 60 bytes of lists a query
    const auto small_why = version(id).supports(long_lists.problem, with_blocks(cpu_env(), id, "1"));
    ASSERT_TRUE(small_why.has_value()) << id;
    EXPECT_NE(small_why->find("over the block budget"), std::string::npos) << *small_why;
  }
}

TEST(PeerTorch, MatchesV0OnTheCpu) {
  if (!KNN_TEST_HAVE_TORCH) GTEST_SKIP() << kWithoutTorch;
  for (const auto& id : kIds) check_all_pass(id, cpu_env());
}

// A 16 KiB block budget: many reference chunks (some narrower than topk) merged into each query
// chunk's lists, and, where the lists are long (topk 32), many query chunks too; the answers stay v0's.
TEST(PeerTorch, SmallBlocksChunkAndMerge) {
  if (!KNN_TEST_HAVE_TORCH) GTEST_SKIP() << kWithoutTorch;
  for (const auto& id : kIds) {
    int split_queries = 0;
    for (const Shape& s : strict_shapes()) {
      const knn::Result r = knn::testing::run_once(version(id), s.data, with_blocks(cpu_env(), id, "16"));
      expect_pass(r, id + " " + s.name + " (16 KiB blocks)");
      if (s.data.problem.m > 1 && s.data.problem.n > 100) EXPECT_GT(chunks(r.path, "reference"), 1) << r.path;
      split_queries += chunks(r.path, "query") > 1;
    }
    EXPECT_GT(split_queries, 0) << id;
  }
}

// Far from the origin the GEMM identity rounds by more than the neighbours' distances: the
// validation reports p-torch's and p-torch-cpu's wrong neighbours; cdist's direct form is right.
TEST(PeerTorch, ValidationCatchesTheGemmRecipeFarFromTheOrigin) {
  if (!KNN_TEST_HAVE_TORCH) GTEST_SKIP() << kWithoutTorch;
  const Dataset d(3, 4, far_clusters(256, knn::PointSet::queries), far_clusters(4000, knn::PointSet::references));
  expect_pass(knn::testing::run_once(version("v0"), d, cpu_env()), "v0");
  expect_pass(knn::testing::run_once(version("p-torch-direct"), d, cpu_env()), "p-torch-direct");
  for (const char* id : {"p-torch", "p-torch-cpu"}) {
    const knn::Result r = knn::testing::run_once(version(id), d, cpu_env());
    EXPECT_NE(r.status, Status::pass) << id;
    EXPECT_TRUE(r.validated) << id;
    EXPECT_GT(r.validation.mismatches, 0) << id;
    EXPECT_FALSE(r.validation.first_problem.empty()) << id;
  }
}

// On a GPU: p-torch and p-torch-direct run there (devices_used, the phases), p-torch-cpu stays on the
// CPU; all three answer v0's, with the default blocks and with small ones.
TEST(GpuPeerTorch, MatchesV0OnTheGpu) {
  const knn::DeviceDiscovery disc = knn::discover_devices();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  if (!KNN_TEST_HAVE_TORCH) GTEST_SKIP() << kWithoutTorch << ": GPU test skipped, not run";
  if (!KNN_TEST_HAVE_TORCH_CUDA) GTEST_SKIP() << "built against a libtorch without CUDA: GPU test skipped, not run";
  knn::Environment env = cpu_env();
  env.devices = {disc.devices.front()};
  const int ordinal = disc.devices.front().ordinal;
  for (const char* budget : {"", "16"}) {
    for (const auto& id : kIds)
      for (const Shape& s : strict_shapes()) {
        const knn::Result r = knn::testing::run_once(version(id), s.data, with_blocks(env, id, budget));
        expect_pass(r, id + " " + s.name + (*budget ? " (16 KiB blocks)" : ""));
        if (id == "p-torch-cpu") {
          EXPECT_TRUE(r.devices_used.empty()) << r.path;
          EXPECT_EQ(r.path.rfind("CPU", 0), 0u) << r.path;
          continue;
        }
        EXPECT_EQ(r.devices_used, std::vector<int>{ordinal}) << r.path;
        EXPECT_EQ(r.path.rfind("GPU", 0), 0u) << r.path;
        for (const char* phase : {"h2d", "kernel", "d2h"}) EXPECT_EQ(r.phase_samples_ms.count(phase), 1u) << id << " " << phase;
      }
  }
  const Dataset far(3, 4, far_clusters(256, knn::PointSet::queries), far_clusters(4000, knn::PointSet::references));
  expect_pass(knn::testing::run_once(version("p-torch-direct"), far, env), "p-torch-direct far clusters");
  const knn::Result gemm = knn::testing::run_once(version("p-torch"), far, env);
  EXPECT_NE(gemm.status, Status::pass);
  EXPECT_GT(gemm.validation.mismatches, 0);
}

// After each call libtorch's cached blocks go back to the device: the free memory seen after a call
// that used about a 1 GiB block budget is what it was before, within 256 MiB (cuBLAS's workspace and
// the like), so a version measured after it sees the device as the harness found it.
TEST(GpuPeerTorch, GivesItsCachedMemoryBack) {
  const knn::DeviceDiscovery disc = knn::discover_devices();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  if (!KNN_TEST_HAVE_TORCH_CUDA) GTEST_SKIP() << "built without a libtorch with CUDA: GPU test skipped, not run";
  knn::Environment env = cpu_env();
  env.devices = {disc.devices.front()};
  const int ordinal = disc.devices.front().ordinal;
  const Dataset d(16, 2048, 200000, 8, Distribution::uniform, 21);
  std::vector<std::int32_t> indices(d.problem.result_slots());
  std::vector<float> distances(d.problem.result_slots());
  for (const auto& id : {"p-torch", "p-torch-direct"}) {
    env.params = knn::testing::params_for(id);
    knn::TimingSink timing;
    knn::RunContext first{timing, env, {}, {}};
    version(id).make()->query(d.problem, knn::Neighbors{indices.data(), distances.data()}, first);  // loads libtorch's kernels
    const std::size_t before = knn::device_free_memory(ordinal);
    knn::RunContext ctx{timing, env, {}, {}};
    version(id).make()->query(d.problem, knn::Neighbors{indices.data(), distances.data()}, ctx);
    const std::size_t after = knn::device_free_memory(ordinal);
    EXPECT_GE(after + (std::size_t(256) << 20), before) << id << ": " << ctx.path;
    EXPECT_NE(ctx.path.find("GPU"), std::string::npos) << ctx.path;
    EXPECT_GT(chunks(ctx.path, "query"), 1) << ctx.path;
  }
}
