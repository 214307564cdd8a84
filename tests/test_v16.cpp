// v16 (kd-tree built and searched on the GPU) against v0's loop, row for row: one point, n at a leaf
// size and one either side, identical points, clusters, integer data full of ties, k = 1..16, 20 and
// 33, topk 1..64, self-joins, and topk = 1 at every compiled k with ties, duplicates and odd n; each
// under several parameter settings (v16.leaf, test, sort, final, stage_kib, vec, tail, nearest, lanes,
// heap_lanes, overlap, segment_rows, readback, build), so the build from lists and by radix and segmented sorts, the box and the median test, sorted
// and unsorted waves, leaves staged in shared memory or read from global memory (as float4 groups or
// one float at a time), the run-to-the-end kernel, the top-k heaps and the pair in registers at 1, 2, 4
// and 8 lanes per query, and the heaps at 1, 2, 4 and 8 lanes per query all answer. The leaf plan's padding rule runs on the CPU. GPU tests (Gpu*) skip
// with a message where no CUDA device exists.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <regex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/registry.hpp"
#include "core/topk.hpp"
#include "data.hpp"
#include "devices.hpp"
#include "kernels/bruteforce/detail/filters/tc_tile.hpp"
#include "kernels/trees/gpu_kdtree/kd_leaves.hpp"
#include "kernels/trees/gpu_kdtree/kd_tc_plan.hpp"
#include "kernels/trees/gpu_kdtree/v16_params.hpp"
#include "kernels/trees/gpu_kdtree/wave_trace.hpp"
#include "test_support.hpp"
#if KNN_HAVE_CUDA
#include "kernels/trees/gpu_kdtree/kdtree_gpu_build.hpp"
#endif

using namespace knn;

namespace {

const DeviceDiscovery& discovery() {
  static const DeviceDiscovery d = discover_devices();
  return d;
}

// The parameter settings a case runs under (empty: the default).
struct Knobs {
  std::string name, leaf, test, sort, final_steps, stage, vec, tail, nearest, lanes, heap_lanes, overlap, segment_rows, readback, build, key_sort,
      first_batch, tail_lanes, tail_queue;
  // As v16's parameter values for the call.
  std::map<std::string, std::string> params() const {
    std::map<std::string, std::string> set;
    for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"leaf", leaf}, {"test", test}, {"sort", sort},
                                     {"final", final_steps}, {"stage_kib", stage}, {"vec", vec}, {"tail", tail},
                                     {"nearest", nearest}, {"lanes", lanes}, {"heap_lanes", heap_lanes}, {"overlap", overlap},
                                     {"segment_rows", segment_rows}, {"readback", readback}, {"build", build},
                                     {"key_sort", key_sort}, {"first_batch", first_batch}, {"tail_lanes", tail_lanes},
                                     {"tail_queue", tail_queue}})
      if (!value.empty()) set[key] = value;
    return set;
  }
};

const std::vector<Knobs>& knob_settings() {
  static const std::vector<Knobs> k = {
      {"defaults", "", "", "", ""},
      {"leaf4", "4", "", "", ""},
      {"leaf8_nofinal", "8", "", "", "off"},
      {"leaf16_median", "16", "median", "", ""},
      {"leaf64_baseline", "64", "median", "off", "off"},
      {"leaf32_unsorted_box", "32", "box", "off", "off"},
      {"leaf16_staged", "16", "", "", "", "24"},
      {"staged_nofinal", "", "", "", "off", "48"},
      {"leaf8_scalar_rows", "8", "", "", "", "", "off"},
      {"leaf8_tail64", "8", "", "", "", "", "", "64"},
      {"leaf8_tail1", "8", "", "", "", "", "", "1"},
      {"leaf8_heaps_only", "8", "", "", "", "", "", "", "off"},
      {"leaf16_lanes2", "16", "", "", "", "", "", "", "", "2"},
      {"leaf8_lanes4_median", "8", "median", "", "", "", "", "", "", "4"},
      {"leaf32_lanes8_scalar", "32", "", "", "", "", "off", "", "", "8"},
      {"leaf4_lanes8_nofinal", "4", "", "", "off", "", "", "", "", "8"},
      {"leaf16_median_lanes2", "16", "median", "", "", "", "", "", "", "2"},
      // The heap kernel's lanes (auto gives these small shapes 8): one lane, as before, and 2 and 4 with
      // the median test, one float at a time, unsorted waves without the final steps, the tail at 64.
      {"leaf8_heap_lanes1", "8", "", "", "", "", "", "", "", "", "1"},
      {"leaf16_heap_lanes2_median", "16", "median", "", "", "", "", "", "", "", "2"},
      {"leaf8_heap_lanes4_scalar", "8", "", "", "", "", "off", "", "", "", "4"},
      {"leaf4_heap_lanes2_unsorted", "4", "", "off", "off", "", "", "", "", "", "2"},
      {"leaf32_heap_lanes4_tail64", "32", "", "", "", "", "", "64", "", "", "4"},
      {"leaf8_heap_lanes8", "8", "", "", "", "", "", "", "", "", "8"},
      // The queries copied before the build instead of during it.
      {"leaf16_overlap_off", "16", "", "", "", "", "", "", "", "", "", "off"},
      {"leaf8_overlap_off_lanes2", "8", "", "", "", "", "", "", "", "2", "", "off"},
      // The build's sorts: one radix sort per level, every level but the root node by node, and only
      // the levels of nodes up to 64 rows (the default takes those up to 8192).
      {"leaf8_radix_build", "8", "", "", "", "", "", "", "", "", "", "", "0", "", "sort"},
      {"leaf4_segmented_build", "4", "", "", "", "", "", "", "", "", "", "", "1073741824", "", "sort"},
      {"leaf16_segmented64_median", "16", "median", "", "", "", "", "", "", "", "", "", "64", "", "sort"},
      // The build: by sorts at the defaults, and from lists at every k (auto stops at 16) with many
      // levels and leaves of padding alone (leaf 2 and 4).
      {"build_sort", "", "", "", "", "", "", "", "", "", "", "", "", "", "sort"},
      {"leaf4_build_lists", "4", "", "", "", "", "", "", "", "", "", "", "", "", "lists"},
      {"leaf2_build_lists_median", "2", "median", "", "", "", "", "", "", "", "", "", "", "", "lists"},
      // The host waiting for each wave's count before it queues the next (the default reads it one
      // wave late, the others above with it): at the defaults, and with many short waves (tail 1).
      {"readback_wait", "", "", "", "", "", "", "", "", "", "", "", "", "wait"},
      {"leaf8_tail1_readback_wait", "8", "", "", "", "", "", "1", "", "", "", "", "", "wait"},
      // Each wave's keys ordered by a counting pass: at the defaults, with many short waves (leaf 4,
      // tail 1), without the final steps (the finished keys partitioned out), and with staged leaves.
      {"key_sort_count", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "count"},
      {"leaf4_key_sort_radix", "4", "", "", "", "", "", "", "", "", "", "", "", "", "", "radix"},
      {"leaf4_tail1_key_sort_count", "4", "", "", "", "", "", "1", "", "", "", "", "", "", "", "count"},
      {"leaf8_nofinal_key_sort_count", "8", "", "", "off", "", "", "", "", "", "", "", "", "", "", "count"},
      {"leaf16_staged_key_sort_count", "16", "", "", "", "24", "", "", "", "", "", "", "", "", "", "count"},
      // The first wave at one lane a query with its insertions held back (first_batch; leaf8_heap_lanes1 runs
      // auto: 8 below topk 32; on these shapes the first wave is often the last kernel, which then holds them back
      // leaf after leaf): none, every 4 rows one float at a time, every 32 rows across many short waves
      // (leaf 4, tail 1, more rows a flush than the leaf holds), every 8 with the median test and no final steps.
      {"leaf8_heap_lanes1_batch0", "8", "", "", "", "", "", "", "", "", "1", "", "", "", "", "", "0"},
      {"leaf16_heap_lanes1_batch4_scalar", "16", "", "", "", "", "off", "", "", "", "1", "", "", "", "", "", "4"},
      {"leaf4_heap_lanes1_batch32_tail1", "4", "", "", "", "", "", "1", "", "", "1", "", "", "", "", "", "32"},
      {"leaf32_heap_lanes1_batch8_median_nofinal", "32", "median", "", "off", "", "", "", "", "", "1", "", "", "", "", "", "8"},
      // The last kernel at 16 and 32 lanes a query (v16.tail_lanes): with many leaves of 8 rows (fewer rows than
      // lanes), 32-row leaves with the median test, one float at a time, and the tail at 64 (the last kernel from the start).
      {"leaf8_tail_lanes32", "8", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "32"},
      {"leaf32_tail_lanes16_median", "32", "median", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "16"},
      {"leaf16_tail_lanes32_scalar_tail64", "16", "", "", "", "", "off", "64", "", "", "", "", "", "", "", "", "", "32"},
      // The last kernel at 32 lanes as one warp a query (v16.tail_queue=off; on, the default, its warps take queries from a
      // counter): at the defaults (32 lanes from k 6), with leaves of 8 rows at 32 lanes, and with the tail at 64.
      {"tail_queue_off", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "off"},
      {"leaf8_tail_lanes32_queue_off", "8", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "32", "off"},
      {"leaf16_tail_lanes32_tail64_queue_off", "16", "", "", "", "", "", "64", "", "", "", "", "", "", "", "", "", "32", "off"},
  };
  return k;
}

using V16Case = knn::testing::RowCase;

std::vector<V16Case> v16_cases() {
  std::vector<V16Case> out = {
      {"one_point", 3, 1, 1, 1},
      {"one_point_topk3", 3, 1, 1, 3},
      {"self_one_point", 3, 1, 1, 2, true},
      {"identical", 3, 50, 77, 10, false, Distribution::uniform, kDefaultIntegerMax, true},
      {"self_identical", 2, 300, 300, 32, true, Distribution::uniform, kDefaultIntegerMax, true},
      {"m_small", 3, 3, 5000, 8},
      {"m_large", 3, 20000, 50, 4},
      {"topk_n", 3, 70, 40, 40},
      {"self_topk_n", 3, 40, 40, 39, true},
      {"topk_over_n", 3, 7, 5, 8},
      {"clusters", 3, 3000, 20000, 16, false, Distribution::clusters},
      {"clusters_k16", 16, 500, 20000, 5, false, Distribution::clusters},
      {"duplicates", 3, 1000, 5000, 8, false, Distribution::duplicates},
      {"ties_k3", 3, 1000, 1000, 33, false, Distribution::integers, 4},
      {"self_ties_k8", 8, 777, 777, 5, true, Distribution::integers, 2},
      {"self_uniform", 2, 8192, 8192, 32, true},
      {"self_integers_k5", 5, 4000, 4000, 5, true, Distribution::integers, 100},
  };
  for (int n : {3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 511, 513})
    out.push_back({fmt::format("n{}", n), 3, 300, n, 8});
  for (int topk : {1, 2, 5, 16, 31, 32, 33, 63, 64}) out.push_back({fmt::format("topk{}", topk), 3, 500, 3000, topk});
  for (int dim = 1; dim <= 16; ++dim) {
    out.push_back({fmt::format("k{}_uniform", dim), dim, 700, 3000, 5});
    out.push_back({fmt::format("k{}_ties", dim), dim, 700, 3000, 7, false, Distribution::integers, 10});
  }
  for (int dim : {20, 33}) out.push_back({fmt::format("k{}_uniform", dim), dim, 500, 3000, 5});
  // topk = 1 (the pair in registers unless a self-join): ties, duplicates, leaf sizes, every compiled k.
  for (int dim : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 20}) {
    out.push_back({fmt::format("nn_k{}_uniform", dim), dim, 900, 4000, 1});
    out.push_back({fmt::format("nn_k{}_ties", dim), dim, 900, 4000, 1, false, Distribution::integers, 3});
  }
  for (int n : {1, 2, 31, 255, 257, 1023}) out.push_back({fmt::format("nn_n{}", n), 3, 600, n, 1});
  out.push_back({"nn_identical", 3, 200, 300, 1, false, Distribution::uniform, kDefaultIntegerMax, true});
  out.push_back({"nn_duplicates", 3, 2000, 6000, 1, false, Distribution::duplicates});
  out.push_back({"nn_clusters", 3, 5000, 30000, 1, false, Distribution::clusters});
  out.push_back({"nn_m_large", 3, 30000, 700, 1});
  out.push_back({"nn_self", 3, 3000, 3000, 1, true, Distribution::integers, 5});
  return out;
}

// Runs v16 on the case and checks every row against v0's loop: distances bit for bit and the same
// indices. Returns ctx.path.
std::string check_against_v0(const V16Case& c, const Knobs& knobs) {
  return knn::testing::check_rows_against_v0("v16", c, 1600, discovery().devices[0],
                                             {{"h2d", 1}, {"build_tree", 1}, {"search", 1}, {"d2h", 1}}, knobs.params());
}

class GpuV16 : public ::testing::TestWithParam<std::tuple<V16Case, Knobs>> {};

TEST_P(GpuV16, MatchesV0RowForRow) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const auto& [c, knobs] = GetParam();
  const std::string path = check_against_v0(c, knobs);
  if (!knobs.leaf.empty()) EXPECT_NE(path.find("leaf=" + knobs.leaf), std::string::npos) << path;
  EXPECT_NE(path.find(knobs.test == "median" ? "median test" : "box test"), std::string::npos) << path;
  EXPECT_NE(path.find(knobs.sort == "off" ? "unsorted" : "sorted by leaf"), std::string::npos) << path;
  if (knobs.sort != "off")
    EXPECT_NE(path.find(" key sorts by a counting pass, the others by a radix sort of the leaf bits, key_sort=" +
                        (knobs.key_sort.empty() ? std::string("auto: count below 262144 keys") : knobs.key_sort) + ";"),
              std::string::npos)
        << path;
  EXPECT_NE(path.find(knobs.final_steps == "off" ? "final steps off" : "final steps on"), std::string::npos) << path;
  if (knobs.final_steps != "off")
    EXPECT_NE(path.find(knobs.readback == "wait" || knobs.sort == "off" ? "each wave's count waited for" : "each wave's count read one wave late"),
              std::string::npos)
        << path;
  if (knobs.final_steps != "off")
    EXPECT_NE(path.find(knobs.tail_queue == "off" ? " active queries, tail_queue=off; "
                                                  : " active queries, at 32 lanes a query its warps taking queries from a counter (tail_queue=on); "),
              std::string::npos)
        << path;
  if (!knobs.stage.empty()) EXPECT_NE(path.find("stage_kib=" + knobs.stage), std::string::npos) << path;
  if (!knobs.tail.empty()) EXPECT_NE(path.find("tail=" + knobs.tail), std::string::npos) << path;
  // The wave trace starts with every query active in wave 1.
  EXPECT_NE(path.find(fmt::format("active per wave (wave:queries): 1:{}", c.m)), std::string::npos) << path;
  // The pair in registers for topk = 1 without a self-join, unless turned off or leaves are staged.
  const bool registers = c.topk == 1 && !c.self_join && knobs.nearest != "off" && knobs.stage.empty();
  EXPECT_NE(path.find(registers ? "nearest pair in registers" : "top-k heaps in shared memory"), std::string::npos) << path;
  if (registers && !knobs.lanes.empty())
    EXPECT_NE(path.find("lanes per query per wave: " + knobs.lanes), std::string::npos) << path;
  // v16.tail_lanes: the heap kernel's waves at one lane a query, the last kernel (where it ran) at the lanes set.
  if (!registers && !knobs.tail_lanes.empty()) {
    const std::string::size_type at = path.find("lanes per query per wave: ");
    ASSERT_NE(at, std::string::npos) << path;
    const std::string trace = path.substr(at, path.find(';', at) - at);
    std::smatch run;
    for (auto it = trace.cbegin(); std::regex_search(it, trace.cend(), run, std::regex("(\\d+) \\(")); it = run.suffix().first)
      EXPECT_TRUE(run[1] == "1" || run[1] == knobs.tail_lanes) << trace;
  }
  // The build as set; auto from lists up to 16 dimensions. With segment_rows=0 every level of the
  // sort build is one radix sort.
  const bool lists = knobs.build == "lists" || (knobs.build.empty() && c.dim <= kd::kListsAutoMaxDim);
  EXPECT_NE(path.find(lists ? ", built from presorted lists (build=" : ", built by a sort per level (build="), std::string::npos) << path;
  if (knobs.segment_rows == "0") EXPECT_EQ(path.find("sorted node by node"), std::string::npos) << path;
  // Separate queries go up during the build unless overlap=off.
  if (!c.self_join)
    EXPECT_NE(path.find(knobs.overlap == "off" ? ", the queries copied before the build (overlap=off)" : ", the queries copied during the build"),
              std::string::npos)
        << path;
  // The heap kernel's lanes as set (staged leaves keep 1 lane in the sorted waves).
  if (!registers && !knobs.heap_lanes.empty() && knobs.stage.empty())
    EXPECT_NE(path.find("lanes per query per wave: " + knobs.heap_lanes + " (waves 1"), std::string::npos) << path;
  // The first wave's insertions held back (v16.first_batch; auto: 8 below topk 32, else none) wherever it
  // runs the heap kernel at one lane a query from unstaged leaves.
  if (!registers) {
    const bool is_auto = knobs.first_batch.empty();
    const std::string fb = is_auto ? (c.topk < 32 ? "8" : "0") : knobs.first_batch;
    const std::string value = (is_auto ? "first_batch=auto: " : "first_batch=") + fb;
    const std::string said = fb == "0"                                          ? "each row put in as it is found, " + value + ")"
                             : knobs.heap_lanes == "1" && knobs.stage.empty() ? "held and put in after every " + fb + " rows, " + value + ")"
                                                                              : value;
    EXPECT_NE(path.find(said), std::string::npos) << path;
  }
  // Rows as float4 groups wherever k is compiled in, unless vec=off.
  const bool compiled = path.find("compiled in") != std::string::npos;
  EXPECT_NE(path.find(knobs.vec != "off" && compiled ? "rows read as float4 groups" : "rows read one float at a time"),
            std::string::npos)
      << path;
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuV16, ::testing::Combine(::testing::ValuesIn(v16_cases()), ::testing::ValuesIn(knob_settings())),
                         [](const ::testing::TestParamInfo<std::tuple<V16Case, Knobs>>& i) {
                           return fmt::format("{}_{}", std::get<0>(i.param).name, std::get<1>(i.param).name);
                         });

// v16.tc: the sorted waves' warps whose 32 queries sit on at most v16.tc_leaves leaves scan them on the tensor cores
// (kdtree_gpu_tc.cuh).
// Every k it takes (1..12 compiled in) at topk 2, 5 and 16 (8192 queries: 128 a leaf); leaves with padding rows (32760 rows: 8 of them),
// leaves rounded up to whole 8-row groups (16284 rows: 509 a leaf without), leaves of 16 rows with 68 leaves of padding alone, leaves
// of 128 (topk 64), whole numbers with masses of ties, duplicates, clusters, a self-join; every row against v0 bit for bit, with the
// values examined as the harness does. auto takes it from k 6 with 65536 queries. Where it must not run: tc=off, auto at k 5 or
// with 8192 queries, k 16, values not examined, topk 1's pair in registers.
struct TcCase {
  V16Case c;
  std::string mode;
  bool examine, expect;
  std::map<std::string, std::string> params = {};
  bool scans = true;  // some leaves scanned that way (from k 3)
  bool several = false;  // some warp scans with fewer than 32 queries on the leaf (a warp on several leaves)
};
// The path's "): V leaf visits in W warp scans": {V, W}, or {-1, -1} when absent.
std::pair<long long, long long> tc_counts(const std::string& path) {
  std::smatch m;
  if (!std::regex_search(path, m, std::regex(R"(\): (\d+) leaf visits in (\d+) warp scans, )"))) return {-1, -1};
  return {std::stoll(m[1].str()), std::stoll(m[2].str())};
}
std::vector<TcCase> tc_cases() {
  std::vector<TcCase> out;
  const auto add = [&](V16Case c, std::string mode = "on", bool examine = true, bool expect = true) {
    out.push_back({std::move(c), std::move(mode), examine, expect});
  };
  for (int dim : {1, 2, 3, 5, 7, 8, 9, 12})
    for (int topk : {2, 5, 16}) add({fmt::format("k{}_topk{}", dim, topk), dim, 8192, 16384, topk});
  add({"padding_k9", 9, 8192, 32760, 5});
  add({"padding_k3_topk8", 3, 8192, 32760, 8});
  add({"rounded_k9", 9, 8192, 16284, 5});
  add({"rounded_k7_auto", 7, 65536, 16284, 8}, "auto");
  add({"leaf128_topk64", 3, 8192, 16384, 64});
  add({"ties_k5", 5, 8192, 16384, 8, false, Distribution::integers, 4});
  add({"ties_k9", 9, 8192, 16384, 5, false, Distribution::integers, 10});
  add({"ties_k2", 2, 8192, 16384, 16, false, Distribution::integers, 3});
  add({"duplicates_k3", 3, 8192, 16384, 5, false, Distribution::duplicates});
  add({"clusters_k7", 7, 8192, 16384, 16, false, Distribution::clusters});
  add({"self_k5", 5, 16384, 16384, 5, true});
  add({"auto_k9", 9, 65536, 16384, 5}, "auto");
  add({"auto_k9_few_queries", 9, 8192, 16384, 5}, "auto", true, false);
  add({"off_k9", 9, 8192, 16384, 5}, "off", true, false);
  add({"auto_k5", 5, 65536, 16384, 5}, "auto", true, false);
  add({"k16", 16, 8192, 16384, 5}, "on", true, false);
  add({"unexamined_k9", 9, 8192, 16384, 5}, "on", false, false);
  add({"nearest_k5", 5, 8192, 16384, 1}, "on", true, false);
  add({"tiny_leaves_k3", 3, 8192, 3000, 3});  // leaf 4: 256 leaves of 12 rows, 16 when rounded
  out.back().params = {{"leaf", "4"}}, out.back().scans = false;
  // A warp on several leaves (v16.tc_leaves): 8 queries a leaf, so a warp's 32 sit on 4 or more (tail 1: sorted waves down to
  // one query a leaf; at the default 16 the last kernel would take them all).
  add({"few_a_leaf_k9_leaves8", 9, 2048, 65536, 5});
  out.back().params = {{"tc_leaves", "8"}, {"tail", "1"}}, out.back().several = true;
  add({"few_a_leaf_ties_k7_leaves32", 7, 2048, 65536, 8, false, Distribution::integers, 6});
  out.back().params = {{"tc_leaves", "32"}, {"tail", "1"}};
  add({"few_a_leaf_clusters_k12_leaves32", 12, 2048, 65536, 16, false, Distribution::clusters});
  out.back().params = {{"tc_leaves", "32"}, {"tail", "1"}};
  add({"self_k8_leaves2", 8, 16384, 16384, 5, true});
  out.back().params = {{"tc_leaves", "2"}, {"leaf", "64"}};
  // The kernel at the compiler's choice of registers (v16.tc_regs=auto; 64, the default, caps them for 8 blocks an SM).
  add({"ties_k9_regs_auto", 9, 8192, 16384, 5, false, Distribution::integers, 10});
  out.back().params = {{"tc_regs", "auto"}};
  add({"few_a_leaf_k9_leaves8_regs_auto", 9, 2048, 65536, 5});
  out.back().params = {{"tc_leaves", "8"}, {"tail", "1"}, {"tc_regs", "auto"}}, out.back().several = true;
  add({"clusters_k12_regs_auto", 12, 8192, 16384, 16, false, Distribution::clusters});
  out.back().params = {{"tc_regs", "auto"}};
  add({"self_k7_regs_auto", 7, 16384, 16384, 8, true});
  out.back().params = {{"tc_regs", "auto"}};
  return out;
}
class GpuV16Tc : public ::testing::TestWithParam<TcCase> {};
TEST_P(GpuV16Tc, MatchesV0RowForRow) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const TcCase& t = GetParam();
  std::map<std::string, std::string> params = t.params;
  params["tc"] = t.mode;
  const std::string path = knn::testing::check_rows_against_v0("v16", t.c, 1600, disc.devices[0], {{"h2d", 1}, {"build_tree", 1}, {"d2h", 1}},
                                                               params, HostMemory::pageable, t.examine);
  const bool capable = disc.devices[0].cc_major >= 8;
  const std::string::size_type at = path.find("filters them on the tensor cores");
  EXPECT_EQ(at != std::string::npos, t.expect && capable) << path;
  if (at != std::string::npos) {
    // Some leaves scanned that way from k 3 (the shapes of 8192 queries start with about 128 a leaf, the few_a_leaf ones with 8 and
    // sorted waves down to one a leaf). At k 1 and 2 the first wave (heaps empty: never this way) leaves too few queries for a
    // later sorted wave to fill a warp. A warp scan takes at most 32 visits, fewer where the warp sits on several leaves.
    const auto [visits, warp_scans] = tc_counts(path);
    ASSERT_GE(visits, 0) << path;
    EXPECT_LE(visits, 32 * warp_scans) << path;
    if (t.c.dim >= 3 && t.scans) EXPECT_GT(visits, 0) << path;
    if (t.several) EXPECT_LT(visits, 32 * warp_scans) << path;
    EXPECT_NE(path.find("(tc=" + t.mode + ", tc_regs=" + (t.params.count("tc_regs") ? t.params.at("tc_regs") : std::string("64")) + ": fp16 "),
              std::string::npos)
        << path;
  } else {
    EXPECT_NE(path.find("leaves scanned on the CUDA cores (tc=" + t.mode + ": "), std::string::npos) << path;
  }
  if (t.c.n == 16284) EXPECT_NE(path.find("32 leaves x 512 rows (100 padding"), std::string::npos) << path;  // 509 rounded up to 512
}
INSTANTIATE_TEST_SUITE_P(Gpu, GpuV16Tc, ::testing::ValuesIn(tc_cases()),
                         [](const ::testing::TestParamInfo<TcCase>& i) { return i.param.c.name + "_" + i.param.mode; });

// v16.tc_leaves: with 8 queries a leaf (and sorted waves down to one a leaf, tail 1) almost no warp sits on one leaf, so at 1
// nearly every visit is scanned on the CUDA cores (and each warp scan takes all 32 queries of its warp),
// and at 8 the warps scan their leaves on the tensor cores one after another: more visits that way, the same rows as v0's.
TEST(GpuV16TcLeaves, WarpsOnSeveralLeavesScanThemInTurn) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  if (disc.devices[0].cc_major < 8) GTEST_SKIP() << "compute capability " << disc.devices[0].cc_major << ": no tensor-core scan to test";
  const V16Case c{"few_a_leaf_k9", 9, 2048, 65536, 5};
  const auto counts = [&](const std::string& leaves) {
    const std::string path = knn::testing::check_rows_against_v0("v16", c, 1700, disc.devices[0], {{"h2d", 1}, {"build_tree", 1}, {"d2h", 1}},
                                                                 {{"tc", "on"}, {"tc_leaves", leaves}, {"tail", "1"}}, HostMemory::pageable, true);
    EXPECT_NE(path.find("sit on at most " + leaves + (leaves == "1" ? " leaf" : " leaves") + " (tc_leaves)"), std::string::npos) << path;
    const auto found = tc_counts(path);
    EXPECT_GE(found.first, 0) << path;
    return found;
  };
  const auto [one, one_scans] = counts("1");
  const auto [eight, eight_scans] = counts("8");
  EXPECT_EQ(one, 32 * one_scans) << "tc_leaves 1: every warp scan takes its warp's 32 queries";
  EXPECT_LT(eight, 32 * eight_scans) << "tc_leaves 8: " << eight << " visits in " << eight_scans << " warp scans";
  EXPECT_GT(eight, 4 * std::max(one, 1LL)) << "tc_leaves 1: " << one << " visits, 8: " << eight;
}

// readback=lag decides each wave on the device by the exact count that wait reads on the host, so
// both run the same waves: the same count of waves and of sorted ones, the same leaves per query and
// the same active queries in every wave (and rows equal to v0's in both).
TEST(GpuV16Readback, LagRunsTheSameWavesAsWait) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const std::vector<V16Case> cases = {
      {"clusters", 3, 3000, 20000, 16, false, Distribution::clusters},
      {"m_large", 3, 20000, 50, 4},
      {"self_uniform", 2, 8192, 8192, 32, true},
      {"nn_clusters", 3, 5000, 30000, 1, false, Distribution::clusters},
      {"k9_uniform", 9, 4000, 6000, 5},
  };
  // The waves' part of the path: from "; waves " to the end of "leaves per query x", and the trace.
  const auto waves_of = [](const std::string& path) {
    const auto at = path.find("; waves "), stop = path.find(';', path.find("leaves per query", at)), trace = path.find("active per wave");
    EXPECT_TRUE(at != std::string::npos && stop != std::string::npos && trace != std::string::npos) << path;
    if (at == std::string::npos || stop == std::string::npos || trace == std::string::npos) return std::string();
    return path.substr(at, stop - at) + " | " + path.substr(trace);
  };
  for (const V16Case& c : cases)
    for (const char* tail : {"1", "16"}) {
      Knobs lag{"lag", "8"}, wait{"wait", "8"};
      lag.tail = wait.tail = tail;
      wait.readback = "wait";
      const std::string a = waves_of(check_against_v0(c, lag)), b = waves_of(check_against_v0(c, wait));
      EXPECT_FALSE(a.empty());
      EXPECT_EQ(a, b) << c.name << ", tail " << tail;
    }
}

// v16.answers into a pinned output (the harness's default): direct has the heap kernel write each
// finished row there (phase search_d2h, no d2h); copy, and topk 1 without a self-join (the
// nearest-pair kernel) under direct, copy the rows after the search. Rows against v0 bit for bit.
std::vector<V16Case> answer_cases() {
  return {
      {"self_uniform_topk32", 2, 8192, 8192, 32, true},
      {"clusters_topk16", 3, 3000, 20000, 16, false, Distribution::clusters},
      {"ties_k3_topk33", 3, 1000, 1000, 33, false, Distribution::integers, 4},
      {"k5_topk5", 5, 4000, 6000, 5},
      {"k9_topk5_m_large", 9, 20000, 3000, 5},
      {"self_nn_ties", 3, 3000, 3000, 1, true, Distribution::integers, 5},
      {"nn_uniform", 3, 2000, 4000, 1},
      {"topk64", 3, 500, 3000, 64},
      {"self_one_point", 3, 1, 1, 2, true},
  };
}

class GpuV16Answers : public ::testing::TestWithParam<std::tuple<V16Case, std::string>> {};

TEST_P(GpuV16Answers, PinnedOutputMatchesV0RowForRow) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const auto& [c, answers] = GetParam();
  const bool nearest = c.topk == 1 && !c.self_join;
  const bool direct = knn::gpu::v16_direct_wanted(answers, c.topk) && !nearest;
  const long long bytes = (long long)c.m * c.topk * 8;
  const bool early = !direct && knn::gpu::v16_early_wanted(answers, c.topk, bytes);
  std::map<std::string, std::string> params = {{"answers", answers}};
  if (answers == "early") params["early_pct"] = "100";  // the copy starts after wave 2 where a sorted wave follows
  const std::string path = knn::testing::check_rows_against_v0(
      "v16", c, 1616, disc.devices[0],
      {{"h2d", 1u}, {"build_tree", 1u}, {"search", direct ? 0u : 1u}, {"d2h", direct ? 0u : 1u}, {"search_d2h", direct ? 1u : 0u}},
      params, HostMemory::pinned);
  if (direct) {
    EXPECT_NE(path.find("answers written by the heap kernel into the pinned output as queries finish (answers=" + answers), std::string::npos) << path;
    EXPECT_NE(path.find("phase search_d2h)"), std::string::npos) << path;
  } else if (early) {
    // Taken where a wave left a sorted wave behind it (at most early_pct percent active), else said why not.
    const bool taken = path.find("answers copied in one piece from the end of wave ") != std::string::npos;
    const bool none = path.find("early not taken: no wave left at most ") != std::string::npos;
    EXPECT_TRUE(taken != none) << path;
    EXPECT_NE(path.find(answers == "auto" ? "answers=auto: early below topk 32" : "answers=early"), std::string::npos) << path;
  } else if (answers == "auto") {  // these shapes' answers are under 1 MiB
    EXPECT_NE(path.find(fmt::format("(answers=auto: early from 1048576 bytes of answers, these are {})", bytes)), std::string::npos) << path;
  } else {
    EXPECT_NE(path.find(answers == "copy" ? "answers copied after the search (answers=copy)" : "not taken: the nearest-pair kernel)"),
              std::string::npos)
        << path;
  }
}

// answers=early with the copy started after the second wave, the first it may follow (early_pct=100) and many short waves
// (tail 1, so the last kernel comes late): the rows of the queries still active then come from the
// rewrite, the others from the copy, every row against v0 bit for bit (raw heaps left by the copy
// would not match). The heap kernel, the pair in registers (topk 1), ties and a self-join.
TEST(GpuV16Answers, EarlyCopyRowsStillActiveAreWrittenAgain) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const std::vector<V16Case> cases = {
      {"k5_topk5", 5, 4000, 6000, 5},
      {"k9_topk5_m_large", 9, 20000, 3000, 5},
      {"clusters_topk16", 3, 3000, 20000, 16, false, Distribution::clusters},
      {"ties_k3_topk8", 3, 3000, 3000, 8, false, Distribution::integers, 4},
      {"self_nn_ties", 3, 3000, 3000, 1, true, Distribution::integers, 5},
      {"nn_uniform", 3, 2000, 4000, 1},
      {"k2_topk31", 2, 5000, 9000, 31},
  };
  for (const V16Case& c : cases)
    for (const char* leaf : {"8", "64"}) {
      const std::string path = knn::testing::check_rows_against_v0(
          "v16", c, 1617, disc.devices[0], {{"h2d", 1u}, {"build_tree", 1u}, {"search", 1u}, {"d2h", 1u}, {"search_d2h", 0u}},
          {{"answers", "early"}, {"early_pct", "100"}, {"tail", "1"}, {"leaf", leaf}}, HostMemory::pinned);
      EXPECT_NE(path.find("answers copied in one piece from the end of wave 2 on"), std::string::npos) << c.name << ", leaf " << leaf << ": " << path;
    }
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuV16Answers,
                         ::testing::Combine(::testing::ValuesIn(answer_cases()), ::testing::Values("direct", "copy", "auto", "early")),
                         [](const ::testing::TestParamInfo<std::tuple<V16Case, std::string>>& i) {
                           return fmt::format("{}_{}", std::get<0>(i.param).name, std::get<1>(i.param));
                         });

// v16.leaf=0 (the default): 128 from topk 32, 256 below; a set leaf is kept. v16.segment_rows: the
// build's levels below the root whose nodes hold at most that many rows sort node by node. Case 510
// (171 075 rows, top-32) then has 1024 leaves of 168 rows and sorts levels 5-9 node by node, as its
// result's path said on the GPU.
TEST(V16LeafPlan, MinimumLeafByTopkAndTheBuildsSegmentedLevels) {
  EXPECT_EQ(kd::leaf_for(0, 1), 256);
  EXPECT_EQ(kd::leaf_for(0, 31), 256);
  EXPECT_EQ(kd::leaf_for(0, 32), 128);
  EXPECT_EQ(kd::leaf_for(0, 64), 128);
  EXPECT_EQ(kd::leaf_for(64, 32), 64);
  EXPECT_EQ(kd::leaf_for(300, 5), 300);
  const kd::LeafPlan cities = kd::plan_leaves(171075, kd::leaf_for(0, 32));
  EXPECT_EQ(cities.leaves, 1024);
  EXPECT_EQ(cities.leaf_size, 168);
  for (int level = 0; level < cities.levels; ++level) {
    EXPECT_EQ(kd::segmented_level(cities.padded(), level, 8192), level >= 5) << level;
    EXPECT_FALSE(kd::segmented_level(cities.padded(), level, 0)) << level;  // 0: radix sorts only
    EXPECT_EQ(kd::segmented_level(cities.padded(), level, 1 << 30), level > 0) << level;  // never the root
  }
}

// v16.build: lists as asked, sort as asked, auto from lists up to 16 dimensions; the lists need
// dim x padded below 2^31 (a forced build=lists beyond that is a limit, below).
TEST(V16Build, AutoTakesListsUpTo16DimensionsWhereTheyFit) {
  EXPECT_TRUE(kd::build_from_lists("lists", 33, 1000));
  EXPECT_FALSE(kd::build_from_lists("sort", 3, 1000));
  EXPECT_TRUE(kd::build_from_lists("auto", 1, 1000));
  EXPECT_TRUE(kd::build_from_lists("auto", 16, 1 << 20));
  EXPECT_FALSE(kd::build_from_lists("auto", 17, 1 << 20));
  EXPECT_TRUE(kd::lists_fit(16, (std::int64_t(1) << 27) - 1));
  EXPECT_FALSE(kd::lists_fit(16, std::int64_t(1) << 27));
  EXPECT_FALSE(kd::build_from_lists("auto", 16, std::int64_t(1) << 27));
  EXPECT_TRUE(kd::build_from_lists("auto", 2, (std::int64_t(1) << 30) - 1));
  EXPECT_FALSE(kd::build_from_lists("auto", 2, std::int64_t(1) << 30));
}

#if KNN_HAVE_CUDA
// One tree against its definition; returns the first fault ("" when none). The rows are the
// references, each once (padding: +inf, index -1); every node's lo and hi are the least and largest
// coordinates of its real rows (+inf and -inf without one) and the packed box repeats them (0 in its
// padding floats); an internal node's split dimension is the one of largest spread (the first on a
// tie), its split value the least split coordinate of its upper half (the first after the node's
// sort), and no row of its lower half is above it.
std::string tree_fault(const kd::HostKdTree& t, const std::vector<float>& src, int dim) {
  const kd::LeafPlan& plan = t.plan;
  const std::int64_t padded = plan.padded();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<int> seen(std::size_t(plan.n), 0);
  for (std::int64_t r = 0; r < padded; ++r) {
    const std::int32_t id = t.index[r];
    if (id >= plan.n) return fmt::format("row {}: index {} of {}", r, id, plan.n);
    if (id >= 0 && ++seen[id] > 1) return fmt::format("row {}: index {} twice", r, id);
    for (int d = 0; d < dim; ++d)
      if (t.points[r * dim + d] != (id < 0 ? inf : src[std::size_t(id) * dim + d]))
        return fmt::format("row {} (index {}), dimension {}: {}", r, id, d, t.points[r * dim + d]);
  }
  if (std::count(t.index.begin(), t.index.end(), -1) != plan.padding()) return "padding rows miscounted";
  const int pad = kd::box_pad(dim);
  for (int level = 0; level <= plan.levels; ++level) {
    const std::int64_t count = std::int64_t(1) << level, seg = padded >> level;
    for (std::int64_t v = 0; v < count; ++v) {
      const std::int64_t node = count - 1 + v, begin = v * seg;
      int best = 0;
      float spread = -inf;
      for (int d = 0; d < pad; ++d) {
        float lo = 0.f, hi = 0.f;
        if (d < dim) {
          lo = inf, hi = -inf;
          for (std::int64_t r = begin; r < begin + seg; ++r)
            if (t.index[r] >= 0) lo = std::min(lo, t.points[r * dim + d]), hi = std::max(hi, t.points[r * dim + d]);
          if (t.lo[node * dim + d] != lo || t.hi[node * dim + d] != hi)
            return fmt::format("node {} dimension {}: box [{}, {}], its rows [{}, {}]", node, d, t.lo[node * dim + d], t.hi[node * dim + d], lo, hi);
          if (hi - lo > spread) spread = hi - lo, best = d;
        }
        if (t.box[node * 2 * pad + d] != lo || t.box[node * 2 * pad + pad + d] != hi) return fmt::format("node {}: packed box, slot {}", node, d);
      }
      if (level == plan.levels) continue;
      if (t.split_dim[node] != best) return fmt::format("node {}: split dimension {}, widest {}", node, t.split_dim[node], best);
      const float split = t.split[node];
      float upper = inf;  // the least split coordinate of the upper half, padding (+inf) included
      for (std::int64_t r = begin + seg / 2; r < begin + seg; ++r) upper = std::min(upper, t.points[r * dim + best]);
      if (split != upper) return fmt::format("node {}: split value {}, its upper half's least {}", node, split, upper);
      for (std::int64_t r = begin; r < begin + seg; ++r)
        if (r < begin + seg / 2 ? t.points[r * dim + best] > split : t.points[r * dim + best] < split)
          return fmt::format("node {}: row {} ({}) on the wrong side of {}", node, r, t.points[r * dim + best], split);
    }
  }
  return "";
}

// Both builds on small awkward shapes: one point, leaves of padding alone (leaf 1 and 2), ties at
// every median, duplicates, clusters, k = 1 to 20. Each tree holds its definition (tree_fault), and
// where every dimension's coordinates differ the lists give the radix and the segmented builds'
// tree array for array (the leaves' rows as sets: their order inside a leaf is free).
TEST(GpuV16Build, ListsAndSortsBuildValidTreesAndTheSameTreeFromDistinctCoordinates) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  struct Shape {
    std::int64_t n;
    int dim, min_leaf;
    Distribution dist;
    std::uint32_t integer_max;
  };
  const std::vector<Shape> shapes = {
      {1, 3, 4, Distribution::uniform, 100},        {5, 2, 1, Distribution::uniform, 100},       {300, 2, 1, Distribution::uniform, 100},
      {1000, 3, 4, Distribution::uniform, 100},     {1500, 5, 8, Distribution::uniform, 100},    {700, 16, 2, Distribution::uniform, 100},
      {1000, 3, 4, Distribution::integers, 3},      {777, 8, 4, Distribution::integers, 2},      {4097, 3, 16, Distribution::duplicates, 100},
      {20000, 5, 16, Distribution::clusters, 100},  {3000, 1, 8, Distribution::uniform, 100},    {5000, 20, 8, Distribution::uniform, 100},
      {2049, 9, 2, Distribution::integers, 1},
  };
  int compared = 0;
  for (const Shape& s : shapes) {
    std::vector<float> pts(std::size_t(s.n) * s.dim);
    generate_points(s.dist, 4242 + s.n, PointSet::references, s.dim, std::size_t(s.n), pts.data(), s.integer_max);
    const kd::LeafPlan plan = kd::plan_leaves(s.n, s.min_leaf);
    const std::string name = fmt::format("n{}_k{}_leaf{}_{}", s.n, s.dim, s.min_leaf, to_string(s.dist));
    const kd::HostKdTree lists = kd::build_on_device(pts.data(), plan, s.dim, true, 0);
    const kd::HostKdTree radix = kd::build_on_device(pts.data(), plan, s.dim, false, 0);
    const kd::HostKdTree segmented = kd::build_on_device(pts.data(), plan, s.dim, false, 1 << 30);
    EXPECT_EQ(tree_fault(lists, pts, s.dim), "") << name << ", lists";
    EXPECT_EQ(tree_fault(radix, pts, s.dim), "") << name << ", radix sorts";
    EXPECT_EQ(tree_fault(segmented, pts, s.dim), "") << name << ", segmented sorts";
    bool distinct = true;
    for (int d = 0; d < s.dim && distinct; ++d) {
      std::vector<float> column(std::size_t(s.n));
      for (std::int64_t r = 0; r < s.n; ++r) column[r] = pts[r * s.dim + d];
      std::sort(column.begin(), column.end());
      distinct = std::adjacent_find(column.begin(), column.end()) == column.end();
    }
    if (!distinct) continue;
    ++compared;
    for (const kd::HostKdTree* other : {&radix, &segmented}) {
      EXPECT_EQ(lists.lo, other->lo) << name;
      EXPECT_EQ(lists.hi, other->hi) << name;
      EXPECT_EQ(lists.box, other->box) << name;
      EXPECT_EQ(lists.split_dim, other->split_dim) << name;
      EXPECT_EQ(lists.split, other->split) << name;
      for (std::int64_t leaf = 0; leaf < plan.leaves; ++leaf) {
        const auto from = std::size_t(leaf * plan.leaf_size), to = from + std::size_t(plan.leaf_size);
        std::vector<std::int32_t> a(lists.index.begin() + from, lists.index.begin() + to), b(other->index.begin() + from, other->index.begin() + to);
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        EXPECT_EQ(a, b) << name << ", leaf " << leaf;
      }
    }
  }
  EXPECT_GE(compared, 4) << "too few shapes with distinct coordinates to compare the builds";
}
#endif

// v16.answers: direct, copy and early as asked; auto direct from topk 32 (measured: 32 gained, 5
// lost), early below; the early copy's limit is early_pct percent of the queries, at least one.
TEST(V16Answers, AutoTakesDirectFromTopk32AndEarlyBelow) {
  const long long mib = 1 << 20;
  EXPECT_TRUE(knn::gpu::v16_early_wanted("early", 64, 8));  // as asked, whatever the size
  EXPECT_FALSE(knn::gpu::v16_early_wanted("copy", 5, 40 * mib));
  EXPECT_FALSE(knn::gpu::v16_early_wanted("direct", 5, 40 * mib));
  EXPECT_TRUE(knn::gpu::v16_early_wanted("auto", 1, mib));
  EXPECT_FALSE(knn::gpu::v16_early_wanted("auto", 1, mib - 1));  // auto: from 1 MiB of answers
  EXPECT_TRUE(knn::gpu::v16_early_wanted("auto", 31, 40 * mib));
  EXPECT_FALSE(knn::gpu::v16_early_wanted("auto", 32, 40 * mib));
  EXPECT_EQ(knn::gpu::v16_early_limit(1 << 20, 10), 104857);
  EXPECT_EQ(knn::gpu::v16_early_limit(1 << 20, 15), 157286);
  EXPECT_EQ(knn::gpu::v16_early_limit(1 << 20, 100), 1 << 20);
  EXPECT_EQ(knn::gpu::v16_early_limit(5, 1), 1);
  // auto's time rule: 3 x the copy at 50 GB/s (405's 40 MiB of answers: 2.52 ms of waves).
  EXPECT_NEAR(knn::gpu::v16_early_min_ms(40 << 20), 3 * 41.94304 / 50, 1e-9);
  EXPECT_EQ(knn::gpu::v16_early_limit(2000000000, 50), 1000000000);
  EXPECT_TRUE(knn::gpu::v16_direct_wanted("direct", 1));
  EXPECT_FALSE(knn::gpu::v16_direct_wanted("copy", 64));
  EXPECT_FALSE(knn::gpu::v16_direct_wanted("auto", 5));
  EXPECT_FALSE(knn::gpu::v16_direct_wanted("auto", 31));
  EXPECT_TRUE(knn::gpu::v16_direct_wanted("auto", 32));
  EXPECT_TRUE(knn::gpu::v16_direct_wanted("auto", 64));
}

// The path's account of the answers, one branch each.
TEST(V16Answers, PathSaysHowTheAnswersCame) {
  knn::gpu::V16AnswersRun r;
  r.topk = 5;
  r.answer_bytes = 40 << 20;
  r.early_limit = 104857, r.early_pct = 10;
  EXPECT_EQ(knn::gpu::v16_answers_text(r),
            "answers copied after the search (answers=auto: early below topk 32, early not taken: no wave left at most 104857 queries (10 %) "
            "active before the last kernel)");
  r.cut_wave = 12, r.held = 156666;
  EXPECT_NE(knn::gpu::v16_answers_text(r).find("from the end of wave 12 on, under the later waves, and the rows of its 156666 queries written "
                                                 "again after the search (answers=auto: early below topk 32, early_pct=10"),
            std::string::npos);
  r.cut_wave = -1, r.held = 0, r.checked_wave = 3, r.waited_ms = 0.125, r.answer_bytes = 8 << 20;
  EXPECT_EQ(knn::gpu::v16_answers_text(r),
            "answers copied after the search (answers=auto: early below topk 32, early not taken: wave 3 left at most 10 % active after "
            "0.125 ms of waves, under 3 x the copy's 0.168 ms at 50 GB/s)");
  r = {};
  r.answer_bytes = 4000;
  EXPECT_EQ(knn::gpu::v16_answers_text(r), "answers copied after the search (answers=auto: early from 1048576 bytes of answers, these are 4000)");
  r.answers = "early", r.lag = false;
  EXPECT_NE(knn::gpu::v16_answers_text(r).find("(answers=early, early not taken: it needs readback=lag"), std::string::npos);
  r.lag = true, r.mapped = false;
  EXPECT_NE(knn::gpu::v16_answers_text(r).find("early not taken: the output is not pinned memory"), std::string::npos);
  r.answers = "copy";
  EXPECT_EQ(knn::gpu::v16_answers_text(r), "answers copied after the search (answers=copy)");
  r.answers = "direct", r.nearest = true;
  EXPECT_EQ(knn::gpu::v16_answers_text(r), "answers copied after the search (answers=direct, not taken: the nearest-pair kernel)");
  r = {}, r.topk = 32, r.direct = true;
  EXPECT_EQ(knn::gpu::v16_answers_text(r),
            "answers written by the heap kernel into the pinned output as queries finish (answers=auto: direct from topk 32: phase search_d2h)");
}

// v16.key_sort: radix and count as asked; auto counts below 2^18 keys.
TEST(V16KeySort, AutoCountsBelow2To18Keys) {
  EXPECT_TRUE(knn::gpu::v16_count_sort("count", 1 << 20));
  EXPECT_FALSE(knn::gpu::v16_count_sort("radix", 5));
  EXPECT_TRUE(knn::gpu::v16_count_sort("auto", (1 << 18) - 1));
  EXPECT_FALSE(knn::gpu::v16_count_sort("auto", 1 << 18));
}

// The path's traces: every wave up to 120 waves, else the first 40, waves about 5 % apart and the
// last; lanes as runs of equal values.
TEST(V16Trace, ActiveQueriesPerWaveAndLanesAsRuns) {
  EXPECT_EQ(kd::active_trace({}), "");
  EXPECT_EQ(kd::active_trace({100, 60, 7}), "1:100 2:60 3:7");
  std::vector<int> many(300);
  for (int w = 0; w < 300; ++w) many[w] = 1000 - w;
  const std::string t = kd::active_trace(many);
  EXPECT_EQ(t.rfind("1:1000 2:999 ", 0), 0u) << t;
  EXPECT_NE(t.find(" 40:961 41:960 43:958 45:956"), std::string::npos) << t;  // waves 1-41 in full, then every other
  EXPECT_EQ(t.find(" 42:959"), std::string::npos) << t;
  EXPECT_NE(t.find(" 280:721 293:708"), std::string::npos) << t;  // about 5 % apart
  EXPECT_EQ(t.substr(t.size() - 8), " 300:701") << t;           // and the last
  EXPECT_EQ(kd::lanes_trace({1, 1, 1, 8}), "1 (waves 1-3), 8 (4)");
  EXPECT_EQ(kd::lanes_trace({2}), "2 (waves 1)");
  EXPECT_EQ(kd::lanes_trace({1, 2, 2, 4}), "1 (waves 1), 2 (2-3), 4 (4)");
  EXPECT_EQ(kd::heaps_text(0, false, false), "top-k heaps in shared memory (each row put in as it is found, first_batch=0)");
  EXPECT_EQ(kd::heaps_text(0, false, true), "top-k heaps in shared memory (each row put in as it is found, first_batch=auto: 0)");
  EXPECT_EQ(kd::heaps_text(16, true, false),
            "top-k heaps in shared memory (the first wave's rows closer than the K-th held and put in after every 16 rows, first_batch=16)");
  EXPECT_EQ(kd::heaps_text(8, true, true),
            "top-k heaps in shared memory (the first wave's rows closer than the K-th held and put in after every 8 rows, first_batch=auto: 8)");
  EXPECT_EQ(kd::heaps_text(8, false, false),
            "top-k heaps in shared memory (first_batch=8 not taken: the first wave ran at more than one lane a query or "
            "from staged leaves)");
  // auto: 8 below topk 32 (where the heaps' shared memory leaves room for the buffer), none from there.
  EXPECT_EQ(knn::gpu::v16_first_batch(-1, 1), 8);
  EXPECT_EQ(knn::gpu::v16_first_batch(-1, 31), 8);
  EXPECT_EQ(knn::gpu::v16_first_batch(-1, 32), 0);
  EXPECT_EQ(knn::gpu::v16_first_batch(16, 32), 16);
  EXPECT_EQ(knn::gpu::v16_first_batch(0, 5), 0);
  // v16.tail_lanes: auto 32 from k 6, else 8; a value set is kept.
  EXPECT_EQ(knn::gpu::v16_tail_lanes(0, 5), 8);
  EXPECT_EQ(knn::gpu::v16_tail_lanes(0, 6), 32);
  EXPECT_EQ(knn::gpu::v16_tail_lanes(0, 16), 32);
  EXPECT_EQ(knn::gpu::v16_tail_lanes(16, 9), 16);
  EXPECT_EQ(knn::gpu::v16_tail_lanes(8, 12), 8);
}

// The thesis's problem shape, small, through the runner's own measurement and validation.
TEST(GpuV16Harness, PassesTheRunnersValidation) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const VersionDesc* v = Registry::instance().find("v16");
  ASSERT_NE(v, nullptr);
  knn::testing::Dataset d(9, 65536, 65536, 5, Distribution::uniform, 450);
  Environment env;
  env.devices = {disc.devices[0]};
  const Result r = knn::testing::run_once(*v, d, env);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
}

// The padding rule: a power of two of leaves, leaves of at least min_leaf rows (all n rows when
// n < min_leaf), fewer padding rows than leaves, and no room for twice the leaves.
TEST(V16LeafPlan, PowerOfTwoLeavesAndLessPaddingThanLeaves) {
  for (std::int64_t min_leaf : {1, 2, 3, 4, 64, 100, 256, 512}) {
    std::vector<std::int64_t> sizes = {1, 2, 3, 5, 1000, 65535, 65536, 65537, 200064, 1 << 20, (1 << 20) + 1, 2147483647};
    for (std::int64_t f : {min_leaf - 1, min_leaf, min_leaf + 1, 2 * min_leaf - 1, 2 * min_leaf, 2 * min_leaf + 1})
      if (f >= 1) sizes.push_back(f);
    for (std::int64_t n : sizes) {
      const kd::LeafPlan p = kd::plan_leaves(n, min_leaf);
      const std::string what = fmt::format("n {} min_leaf {}", n, min_leaf);
      EXPECT_EQ(p.n, n) << what;
      EXPECT_EQ(p.leaves, std::int64_t(1) << p.levels) << what;
      EXPECT_GE(p.padded(), n) << what;
      EXPECT_LT(p.padding(), p.leaves) << what;
      EXPECT_EQ(p.nodes(), 2 * p.leaves - 1) << what;
      if (n >= min_leaf) {
        EXPECT_GE(p.leaf_size, min_leaf) << what;
        EXPECT_GT(2 * p.leaves * min_leaf, n) << what;  // the most leaves the rule allows
      } else {
        EXPECT_EQ(p.leaves, 1) << what;
        EXPECT_EQ(p.leaf_size, n) << what;
      }
    }
  }
  EXPECT_THROW(kd::plan_leaves(0, 256), std::invalid_argument);
  EXPECT_THROW(kd::plan_leaves(10, 0), std::invalid_argument);
  const kd::LeafPlan thesis = kd::plan_leaves(1 << 20, 256);
  EXPECT_EQ(thesis.leaves, 4096);
  EXPECT_EQ(thesis.leaf_size, 256);
  EXPECT_EQ(thesis.padding(), 0);
  const kd::LeafPlan one_more = kd::plan_leaves((1 << 20) + 1, 256);
  EXPECT_EQ(one_more.leaves, 4096);
  EXPECT_EQ(one_more.leaf_size, 257);
  EXPECT_EQ(one_more.padding(), 4095);
  // v16.tc's whole 8-row groups: the size rounded up, the leaves as before, the padding below 8 per leaf.
  for (std::int64_t n : {std::int64_t(1), std::int64_t(7), std::int64_t(3000), std::int64_t(16284), std::int64_t(200064), (std::int64_t(1) << 20) + 1})
    for (std::int64_t min_leaf : {4, 128, 256}) {
      const kd::LeafPlan plain = kd::plan_leaves(n, min_leaf), whole = kd::plan_leaves(n, min_leaf, 8);
      const std::string what = fmt::format("n {} min_leaf {}", n, min_leaf);
      EXPECT_EQ(whole.leaves, plain.leaves) << what;
      EXPECT_EQ(whole.leaf_size % 8, 0) << what;
      EXPECT_GE(whole.leaf_size, plain.leaf_size) << what;
      EXPECT_LT(whole.leaf_size, plain.leaf_size + 8) << what;
      EXPECT_LT(whole.padding(), 8 * whole.leaves) << what;
    }
  EXPECT_EQ(kd::plan_leaves(16284, 256, 8).leaf_size, 512);
  EXPECT_EQ(kd::plan_leaves(200064, 128, 8).leaf_size, 200);  // case 200: 1024 leaves of 196 rows, 200 rounded
  EXPECT_THROW(kd::plan_leaves(10, 4, 0), std::invalid_argument);
}

// v16.tc's plan (kd_tc_plan.hpp): where it applies, v15's tile scale and bound, and the path's words.
TEST(V16Tc, PlanWhereItAppliesAndItsWords) {
  std::vector<float> points(9 * 64, 0.25f);
  Problem p{9, 64, 64, 5, points.data(), points.data()};
  const auto plan = [&](const std::string& mode, int cc = 9, int leaf = 256, bool compiled = true, bool heap = true) {
    return kd::plan_tc_leaves(p, mode, cc, leaf, compiled, heap);
  };
  EXPECT_EQ(plan("on").why, "values not examined");
  p.values = ValueTraits{true, false, -1.f, 3.f, true};
  kd::TcLeafPlan on = plan("on");
  ASSERT_TRUE(on.on) << on.why;
  EXPECT_EQ(on.center, 1.f);
  EXPECT_EQ(on.scale, 0.25f);  // H just above 2: H·s just above 1/2, as v15's tile filter takes it
  EXPECT_GE(double(on.band), gpu::tile_score_error_bound(9, 2.0 * 0.25));
  EXPECT_EQ(plan("off").why, "turned off");
  EXPECT_EQ(plan("auto").why, "auto: fewer than 65536 queries");  // auto: from k 6 and 2^16 queries
  EXPECT_EQ(kd::tc_leaf_multiple("auto", p, true, true), 1);
  EXPECT_EQ(kd::tc_leaf_multiple("on", p, true, true), 8);
  p.m = 1 << 16;
  EXPECT_EQ(plan("auto").center, on.center);
  EXPECT_TRUE(plan("auto").on);
  EXPECT_EQ(kd::tc_leaf_multiple("auto", p, true, true), 8);
  EXPECT_EQ(kd::tc_leaf_multiple("auto", p, false, true), 1);
  EXPECT_EQ(kd::tc_leaf_multiple("off", p, true, true), 1);
  p.dim = 5;
  EXPECT_EQ(plan("auto").why, "auto: k below 6");
  EXPECT_EQ(kd::tc_leaf_multiple("auto", p, true, true), 1);
  EXPECT_TRUE(plan("on").on);
  p.dim = 6;
  EXPECT_EQ(kd::tc_leaf_multiple("auto", p, true, true), 8);
  EXPECT_EQ(kd::tc_leaf_multiple("on", p, true, false), 1);  // k 6 not compiled in: no scan, no rounding
  p.dim = 13;
  EXPECT_EQ(kd::tc_leaf_multiple("on", p, true, true), 1);
  p.dim = 9, p.m = 64;
  EXPECT_EQ(plan("on", 9, 256, true, false).why, "topk 1's pair in registers");
  EXPECT_NE(plan("on", 9, 256, false).why.find("k = 9: the tensor-core scan takes k up to 12 compiled in"), std::string::npos);
  EXPECT_NE(plan("on", 9, 313).why.find("leaves of 313 rows are not whole 8-row groups"), std::string::npos);
  EXPECT_NE(plan("on", 7).why.find("compute capability 7.x"), std::string::npos);
  p.topk = 64;  // v15's own plan stops at topk 16; the scale does not depend on topk
  EXPECT_TRUE(plan("on").on);
  p.dim = 13;
  EXPECT_FALSE(plan("on").on);
  p.dim = 9, p.values.finite = false;
  EXPECT_EQ(plan("on").why, "not every value is finite");
  EXPECT_EQ(kd::tc_leaves_text(plan("off"), "off", 4, 0, 0, 100), "leaves scanned on the CUDA cores (tc=off: turned off)");
  const std::string text = kd::tc_leaves_text(on, "on", 4, 320, 12, 640);
  EXPECT_NE(text.find("whose 32 queries sit on at most 4 leaves (tc_leaves), every heap full, filters them on the tensor cores one leaf "
                      "after another (tc=on: fp16 m16n8k16 scores with c = 1, s = 2^-2"),
            std::string::npos) << text;
  EXPECT_NE(text.find("): 320 leaf visits in 12 warp scans, 50.0 % of the leaves visited"), std::string::npos) << text;
  EXPECT_EQ(tc_counts(text), std::make_pair(320LL, 12LL));
  EXPECT_NE(kd::tc_leaves_text(on, "on", 1, 64, 2, 640).find("whose 32 queries sit on at most 1 leaf (tc_leaves)"), std::string::npos);
}

TEST(V16Supports, ParametersAndLimits) {
  // Values outside the declarations never reach the version (the harness refuses them); checked in
  // builds without CUDA too.
  for (const auto& [name, bad] : std::vector<std::pair<std::string, std::string>>{
           {"leaf", "-1"}, {"leaf", "x"}, {"leaf", "9000"}, {"sort", "2"}, {"sort", "1"}, {"final", "yes"}, {"test", "plane"},
           {"stage_kib", "161"}, {"tc_leaves", "0"}, {"tc_leaves", "33"}, {"vec", "2"}, {"tail", "0"}, {"nearest", "2"}, {"lanes", "3"}, {"lanes", "16"}, {"lanes", "0"}, {"heap_lanes", "3"}, {"heap_lanes", "0"}, {"build", "tree"},
           {"first_batch", "3"}, {"first_batch", "64"}, {"first_batch", "-4"}})
    EXPECT_THROW(ParamValues("v16", knn::gpu::v16_params(), {{name, bad}}), ParamError) << name << "=" << bad;
  const VersionDesc* v = Registry::instance().find("v16");
  if (v == nullptr) GTEST_SKIP() << "v16 is built only with CUDA: not registered in this build";
  EXPECT_TRUE(v->self_join);
  std::vector<float> points(3 * 100, 0.5f);
  Problem p{3, 100, 100, 5, points.data(), points.data()};
  Environment env;
  env.params = knn::testing::params_for("v16");
  EXPECT_EQ(v->supports(p, env).value_or(""), "no CUDA device");
  DeviceInfo fake;
  fake.ordinal = 0;
  fake.shared_per_block_optin = 227 * 1024;
  env.devices = {fake};
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
  p.topk = 64;
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
  p.topk = 65;
  EXPECT_NE(v->supports(p, env).value_or("").find("topk 65 over v16's limit of 64"), std::string::npos);
  p.topk = 5;
  p.dim = 129;
  EXPECT_NE(v->supports(p, env).value_or("").find("k = 129 over v16's limit of 128"), std::string::npos);
  p.dim = 3;
  p.n = 0;
  EXPECT_NE(v->supports(p, env).value_or("").find("at least one point"), std::string::npos);
  // build=lists where its lists would reach 2^31 entries (not allocated: supports only plans).
  p.n = std::int64_t(1) << 30;
  p.dim = 2;
  env.params = knn::testing::params_for("v16", {{"build", "lists"}});
  EXPECT_NE(v->supports(p, env).value_or("").find("build=lists: 2 dimensions x 1073741824 padded rows reach 2^31 list entries"),
            std::string::npos)
      << v->supports(p, env).value_or("");
  env.params = knn::testing::params_for("v16", {{"build", "sort"}});
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
}

}  // namespace
