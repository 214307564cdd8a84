// v15 (fused distance + top-k, chunked copy under the search) against v0's loop on the same
// problem: topk from 1 to 2048 (register lists, heaps, the atomicMin and the sorted merges),
// k compiled in and at run time, m = 1, 7 and 1024 (one thread's rows split across blocks, or
// many query groups), n = 1, 100 and 65537 (chunks, padding rows), self-joins, and integer data
// full of exact ties. GPU tests (GpuV15*) skip with a message where no CUDA device exists; the
// chunk and split planning (kernels/bruteforce/detail/scan/scan_plan.hpp) and supports() run on the CPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/order.hpp"
#include "core/registry.hpp"
#include "core/topk.hpp"
#include "data.hpp"
#include "devices.hpp"
#include "kernels/bruteforce/engine.hpp"
#include "kernels/bruteforce/detail/filters/tc_filter.hpp"
#include "kernels/bruteforce/detail/filters/tc_tile.hpp"
#include "kernels/bruteforce/detail/grid/query_grid.hpp"
#include "kernels/bruteforce/detail/int8/exact_int8.hpp"
#include "kernels/bruteforce/detail/scan/scan_path.hpp"
#include "kernels/bruteforce/detail/scan/scan_plan.hpp"
#include "kernels/bruteforce/detail/seed/scan_seed.hpp"
#include "kernels/bruteforce/detail/seed/seed_collect.hpp"
#include "test_support.hpp"

using namespace knn;

namespace {

struct V15Case {
  int dim, m, n, topk;
  bool self_join;
  Distribution dist;
  std::uint32_t integer_max;
  int checked_rows;  // 0: every query; otherwise about this many, spread over the queries
  // The exact int8 path: v15.int8 for the call ("" leaves the default and the values unexamined,
  // as the older cases run) and a constant added to every value (negative and large whole values).
  std::string int8 = "";
  float offset = 0.f;
  // A factor every value is multiplied by (after the offset): 1e-20 puts the squared distances among
  // float's subnormals, where the query grid's reach adds 2^-148 (query_grid_kernels.cuh).
  float scale = 1.f;
  std::string int8_chunks = "";  // v15.int8_chunks ("" leaves the default: auto)
  std::string int8_ramp = "";    // v15.int8_ramp ("" leaves the default: on)
  // The tensor-core filter: v15.tc for the call ("" leaves the default) and whether it must run.
  std::string tc = "";
  bool expect_tc = false;
  // The fp32 filter: v15.fp32_filter and v15.fp32_queries ("" leaves the defaults), and
  // whether it must run.
  std::string f32 = "";
  std::string f32_queries = "";
  std::string f32_stage = "";  // v15.fp32_stage ("" leaves the default: auto)
  bool expect_f32 = false;
  // v15.tc_split and v15.shared_lists ("" leaves the defaults).
  std::string tc_split = "";
  std::string shared_lists = "";
  // The seed: v15.seed ("" leaves the default) and whether it must run.
  std::string seed = "";
  bool expect_seed = false;
  // The seed's candidate buffers: v15.collect and v15.collect_queries ("" leaves the
  // defaults), and whether they must run (checked where `seed` is set).
  std::string collect = "";
  std::string collect_queries = "";
  bool expect_collect = false;
  // v15.collect_scores ("" leaves the default): the buffers take fp32 scores wherever the values
  // are examined (every case that sets `collect`) unless it is off.
  std::string collect_scores = "";
  // v15.collect_tc ("" leaves the default): "on" takes the tensor cores' scores instead of fp32's.
  std::string collect_tc = "";
  // Whether the gate between the CUDA cores and the tensor cores runs (collect_tc=auto on
  // its shapes: k 4..5, topk <= 8, from 65536 queries).
  bool expect_gate = false;
  int expect_gate_tc = -1;  // the gate's choice: 1 the tensor cores, 0 the CUDA cores, -1 either
  // v15.collect_balance ("" leaves the default).
  std::string collect_balance = "";
  // v15.one_stream ("" leaves the default: off).
  std::string one_stream = "";
  // v15.host_keys ("" leaves the default: auto, up to 4096 queries).
  std::string host_keys = "";
  // The tile filter: v15.tc_tile ("" leaves the default) and whether it must run.
  std::string tc_tile = "";
  bool expect_tile = false;
  std::string tile_splits = "";  // v15.tile_splits ("" leaves the default: the rule)
  std::string ramp = "";         // v15.ramp ("" leaves the default: on)
  // The query grid: v15.grid ("" runs the case with it off) and whether it must run.
  std::string grid = "";
  bool expect_grid = false;
  std::string name() const {
    return fmt::format("{}k{}_m{}_n{}_topk{}_{}{}{}{}{}{}{}{}{}{}", self_join ? "self_" : "", dim, m, n, topk, to_string(dist),
                       dist == Distribution::integers ? fmt::format("{}", integer_max) : std::string(),
                       int8.empty() ? std::string() : "_int8" + int8, tc.empty() ? std::string() : "_tc" + tc,
                       f32.empty() ? std::string() : "_f32" + f32 + (f32_queries.empty() ? "" : "q" + f32_queries) + (f32_stage.empty() ? "" : "s" + f32_stage),
                       offset == 0.f ? std::string() : fmt::format("_plus{}", offset < 0 ? "m" + std::to_string(int(-offset)) : std::to_string(int(offset))),
                       tc_split.empty() ? std::string() : "_split" + tc_split,
                       shared_lists.empty() ? std::string() : "_shared" + shared_lists,
                       seed.empty() ? std::string() : "_seed" + seed,
                       collect.empty() && collect_queries.empty() ? std::string() : "_collect" + collect + (collect_queries.empty() ? "" : "q" + collect_queries) + (collect_scores.empty() ? "" : "_scores" + collect_scores)) +
           (collect_tc.empty() ? "" : "_ctc" + collect_tc) + (collect_balance.empty() ? "" : "_balance" + collect_balance) +
           (one_stream.empty() ? "" : "_one" + one_stream) + (int8_chunks.empty() ? "" : "_chunks" + int8_chunks) +
           (tc_tile.empty() ? "" : "_tile" + tc_tile) + (host_keys.empty() ? "" : "_hostkeys" + host_keys) +
           (int8_ramp.empty() ? "" : "_ramp" + int8_ramp) + (grid.empty() ? "" : "_grid" + grid) +
           (scale == 1.f ? "" : fmt::format("_scale10m{}", std::lround(-std::log10(double(scale))))) +
           (tile_splits.empty() ? "" : "_tsplits" + tile_splits) + (ramp.empty() ? "" : "_rampv" + ramp);
  }
};

void PrintTo(const V15Case& c, std::ostream* os) { *os << c.name(); }

const DeviceDiscovery& discovery() {
  static const DeviceDiscovery d = discover_devices();
  return d;
}

V15Case make(int dim, int m, int n, int topk, bool self_join = false, Distribution dist = Distribution::uniform,
             std::uint32_t integer_max = kDefaultIntegerMax, int checked_rows = 0) {
  return {dim, self_join ? n : m, n, topk, self_join, dist, integer_max, checked_rows};
}

std::vector<V15Case> v15_cases() {
  std::vector<V15Case> out;
  // Every list kind and both merges: few queries against many rows (partials merged), and a
  // self-join of integer points in [0, 4)^2, where most distances tie.
  for (int topk : {1, 2, 8, 31, 32, 33, 100, 256, 1024, 2048}) {
    out.push_back(make(3, 7, 65537, topk));
    out.push_back(make(2, 0, 2500, topk, true, Distribution::integers, 4));
  }
  for (int topk : {1, 8, 33, 256}) out.push_back(make(3, 1, 65537, topk, false, Distribution::duplicates));
  // Every dimension, compiled in or not, with many queries (written in place) and one query.
  for (int dim : {1, 2, 3, 5, 7, 16, 33, 128})
    for (int topk : {1, 8, 32, 33}) {
      out.push_back(make(dim, 1024, 100, topk, false, Distribution::clusters));
      out.push_back(make(dim, 1, 65537, topk, false, Distribution::integers, 10));
    }
  // Few queries, topk 1, 48 MiB and more: the last of 8 chunks cut in halves (scan_plan.hpp's
  // taper), ties across the cuts (duplicates, whole numbers).
  out.push_back(make(3, 1, (1 << 22) + 7, 1, false, Distribution::duplicates));
  out.push_back(make(3, 7, (1 << 22) + 7, 1, false, Distribution::integers, 10));
  // n = 1 (a query with no candidate in a self-join: v0's (0, +inf) for topk 1), topk > n
  // (unfilled slots read (+inf, -1)), n not a multiple of the 4-row group.
  for (int m : {1, 7, 1024}) {
    out.push_back(make(3, m, 1, 1));
    out.push_back(make(3, m, 5, 8));
    out.push_back(make(4, m, 7, 2, false, Distribution::integers, 2));
  }
  out.push_back(make(3, 0, 1, 1, true));
  out.push_back(make(2, 0, 2, 1, true));
  out.push_back(make(2, 0, 3, 4, true));
  // Many queries against many rows, sampled rows: register lists, heaps, ties, k = 16 and 128.
  out.push_back(make(3, 1024, 65537, 1, false, Distribution::integers, 3, 97));
  out.push_back(make(16, 1024, 65537, 32, false, Distribution::uniform, kDefaultIntegerMax, 97));
  out.push_back(make(16, 1024, 65537, 1024, false, Distribution::uniform, kDefaultIntegerMax, 31));
  out.push_back(make(128, 1024, 65537, 100, false, Distribution::clusters, kDefaultIntegerMax, 31));
  out.push_back(make(5, 0, 65537, 5, true, Distribution::uniform, kDefaultIntegerMax, 97));
  out.push_back(make(7, 0, 20011, 33, true, Distribution::integers, 3, 97));
  return out;
}

V15Case int8_case(std::string mode, int dim, int m, int n, int topk, bool self_join = false,
                  std::uint32_t integer_max = 256, float offset = 0.f, int checked_rows = 0) {
  V15Case c = make(dim, m, n, topk, self_join, Distribution::integers, integer_max, checked_rows);
  c.int8 = std::move(mode);
  c.offset = offset;
  return c;
}

// The exact int8 path (kernels/bruteforce/detail/int8/exact_int8.hpp), forced on at shapes the automatic rule
// leaves to the scan (k = 1, m = 1, n = 1) and taken by the rule at Fashion-MNIST's k = 784:
// bytes in [0, 255], few values full of ties, negative and large whole values, every topk class of
// the selection, self-joins.
std::vector<V15Case> int8_cases() {
  std::vector<V15Case> out;
  for (int topk : {1, 2, 10, 33, 100, 1024, 2048}) out.push_back(int8_case("on", 33, 100, 4097, topk));
  for (int dim : {1, 7, 16, 128, 784})
    for (int topk : {1, 10, 100}) out.push_back(int8_case("on", dim, 64, 3001, topk));
  for (int m : {1, 7}) {
    out.push_back(int8_case("on", 40, m, 1, 1));
    out.push_back(int8_case("on", 40, m, 5, 8));
    out.push_back(int8_case("on", 40, m, 65537, 100, false, 2));
  }
  out.push_back(int8_case("on", 3, 0, 1, 1, true));
  out.push_back(int8_case("on", 33, 0, 2500, 33, true, 4));
  out.push_back(int8_case("on", 128, 0, 4097, 10, true));
  out.push_back(int8_case("on", 64, 50, 3000, 10, false, 256, -128.f));
  out.push_back(int8_case("on", 64, 50, 3000, 10, false, 256, 1000.f));
  out.push_back(int8_case("auto", 784, 64, 20000, 10, false, 256, 0.f, 16));
  out.push_back(int8_case("auto", 784, 64, 20000, 100, true, 256, 0.f, 16));
  return out;
}

// v15.int8_chunks forced to 1, 2, 3 and 7 reference chunks (64-row boundaries, exact_int8.hpp) on
// awkward shapes: n not a multiple of the chunk count or of 4, n smaller than the chunk count, topk
// larger than a chunk's rows (unfilled slots carried), many ties across chunk boundaries (values 0
// and 1), topk = 1, a self-join (always one chunk); and the rule's own count at Fashion-MNIST's k.
std::vector<V15Case> int8_chunk_cases() {
  std::vector<V15Case> out;
  for (const char* chunks : {"1", "2", "3", "7"}) {
    std::vector<V15Case> shapes = {int8_case("on", 33, 100, 4097, 10), int8_case("on", 40, 7, 5, 8),
                                   int8_case("on", 40, 50, 130, 100), int8_case("on", 33, 64, 4097, 1024),
                                   int8_case("on", 40, 64, 3001, 33, false, 2), int8_case("on", 128, 64, 3001, 1),
                                   int8_case("on", 16, 40, 1, 1), int8_case("on", 33, 0, 2500, 33, true, 4)};
    for (V15Case c : shapes) {
      c.int8_chunks = chunks;
      out.push_back(c);
    }
  }
  V15Case fashion = int8_case("auto", 784, 64, 20000, 100, false, 256, 0.f, 16);
  fashion.int8_chunks = "auto";
  out.push_back(fashion);
  // v15.int8_ramp off: equal chunks.
  for (V15Case c : {int8_case("on", 33, 100, 4097, 10), int8_case("on", 40, 64, 3001, 33, false, 2)}) {
    c.int8_chunks = "3", c.int8_ramp = "off";
    out.push_back(c);
  }
  return out;
}

V15Case tc_case(std::string mode, bool expect, int dim, int m, int n, bool self_join = false,
                Distribution dist = Distribution::uniform, std::uint32_t integer_max = kDefaultIntegerMax,
                float offset = 0.f, int checked_rows = 0) {
  V15Case c = make(dim, m, n, 1, self_join, dist, integer_max, checked_rows);
  c.tc = std::move(mode);
  c.expect_tc = expect;
  c.offset = offset;
  return c;
}

// The tensor-core filter (kernels/bruteforce/detail/filters/tc_filter.hpp), topk 1: every slice count (k
// 1..32), partial query tiles and blocks (m = 1, 7, 16, 17, 63, 65), rows not a multiple of the 8-row step
// and shorter than one, one row, ties everywhere (integers, duplicates: the smaller index must
// win as in v0), clusters, values far from 0 (the centre removes the offset) and a spread that
// makes the band wide (most rows candidates), self-joins, and the automatic rule on both sides.
std::vector<V15Case> tc_cases() {
  std::vector<V15Case> out;
  for (int dim : {1, 2, 3, 5, 7, 8, 9, 16, 17, 24, 31, 32})
    out.push_back(tc_case("on", true, dim, 1024, 65537, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 97));
  for (int m : {1, 7, 16, 17, 63, 65}) out.push_back(tc_case("on", true, 3, m, 5003));
  for (int n : {1, 2, 7, 8, 9, 100}) out.push_back(tc_case("on", true, 3, 70, n));
  for (int dim : {3, 16}) {
    out.push_back(tc_case("on", true, dim, 300, 20011, false, Distribution::integers, 4));
    out.push_back(tc_case("on", true, dim, 300, 20011, false, Distribution::duplicates));
    out.push_back(tc_case("on", true, dim, 300, 20011, false, Distribution::clusters));
    out.push_back(tc_case("on", true, dim, 300, 20011, false, Distribution::uniform, kDefaultIntegerMax, 6400.f));
    out.push_back(tc_case("on", true, dim, 300, 20011, false, Distribution::integers, 1000000));
    out.push_back(tc_case("on", true, dim, 0, 20011, true, Distribution::uniform));
    out.push_back(tc_case("on", true, dim, 0, 20011, true, Distribution::integers, 3));
  }
  out.push_back(tc_case("on", true, 2, 0, 1, true));
  out.push_back(tc_case("on", true, 2, 0, 2, true));
  out.push_back(tc_case("auto", true, 8, 64, 1 << 18));
  out.push_back(tc_case("auto", false, 8, 63, 1 << 18));
  out.push_back(tc_case("auto", false, 3, 1024, 1 << 18, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61));
  out.push_back(tc_case("auto", true, 16, 1024, 1 << 20, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61));
  out.push_back(tc_case("off", false, 3, 1024, 65537, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 97));
  return out;
}

V15Case f32_case(std::string mode, bool expect, int dim, int m, int n, bool self_join = false,
                 Distribution dist = Distribution::uniform, std::uint32_t integer_max = kDefaultIntegerMax,
                 float offset = 0.f, int checked_rows = 0, std::string queries = "") {
  V15Case c = make(dim, m, n, 1, self_join, dist, integer_max, checked_rows);
  c.f32 = std::move(mode);
  c.expect_f32 = expect;
  c.f32_queries = std::move(queries);
  c.offset = offset;
  return c;
}

// The fp32 filter (kernels/bruteforce/detail/filters/fp32_filter.cuh), topk 1: every k it compiles (1..7),
// both query counts per thread, query slots past m (m = 1, 7, 8, 9, 33, 129), rows not a multiple of
// the 4-row group and fewer than one, ties everywhere (integers, duplicates), clusters, values far
// from 0, a spread that widens the band, self-joins, and the automatic rule on both sides.
std::vector<V15Case> f32_cases() {
  std::vector<V15Case> out;
  for (int dim = 1; dim <= 7; ++dim)
    for (const char* q : {"", "4"})
      out.push_back(f32_case("on", true, dim, 1024, 65537, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 97, q));
  for (int m : {1, 7, 8, 9, 33, 129}) out.push_back(f32_case("on", true, 3, m, 5003));
  for (int n : {1, 2, 3, 4, 5, 100}) out.push_back(f32_case("on", true, 3, 70, n));
  for (int dim : {3, 7})
    for (const char* q : {"", "4"}) {
      out.push_back(f32_case("on", true, dim, 300, 20011, false, Distribution::integers, 4, 0.f, 0, q));
      out.push_back(f32_case("on", true, dim, 300, 20011, false, Distribution::duplicates, kDefaultIntegerMax, 0.f, 0, q));
      out.push_back(f32_case("on", true, dim, 300, 20011, false, Distribution::clusters, kDefaultIntegerMax, 0.f, 0, q));
      out.push_back(f32_case("on", true, dim, 300, 20011, false, Distribution::uniform, kDefaultIntegerMax, 6400.f, 0, q));
      out.push_back(f32_case("on", true, dim, 300, 20011, false, Distribution::integers, 1000000, 0.f, 0, q));
      out.push_back(f32_case("on", true, dim, 0, 20011, true, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, q));
      out.push_back(f32_case("on", true, dim, 0, 20011, true, Distribution::integers, 3, 0.f, 0, q));
    }
  out.push_back(f32_case("on", true, 2, 0, 1, true));
  out.push_back(f32_case("on", true, 2, 0, 2, true));
  out.push_back(f32_case("on", false, 8, 100, 5003));  // k = 8: the tensor-core filter's range
  out.push_back(f32_case("auto", true, 3, gpu::kFp32MinQueries, gpu::kFp32MinRows));
  out.push_back(f32_case("auto", false, 3, gpu::kFp32MinQueries - 1, gpu::kFp32MinRows));
  out.push_back(f32_case("auto", false, 3, 1024, gpu::kFp32MinRows - 1, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61));
  out.push_back(f32_case("auto", false, 1, 1024, gpu::kFp32MinRows, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61));
  out.push_back(f32_case("auto", true, 3, 1024, 1 << 20, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61));
  out.push_back(f32_case("off", false, 3, 1024, 1 << 17, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61));
  // Several chunks (8 MiB and more, the first ones growing): ties and clusters across the chunks'
  // boundaries, both query counts per thread.
  out.push_back(f32_case("on", true, 2, 300, (1 << 20) + 3, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61));
  out.push_back(f32_case("on", true, 5, 100, (1 << 19) + 1, false, Distribution::integers, 4, 0.f, 37));
  out.push_back(f32_case("on", true, 3, 257, 1 << 20, false, Distribution::clusters, kDefaultIntegerMax, 0.f, 41, "4"));
  // fp32_stage forced both ways on the shapes above (auto stages the rows from 32 query
  // slots, and reads them from global memory below).
  const auto staged = [&](V15Case c, const char* stage) {
    c.f32_stage = stage;
    out.push_back(std::move(c));
  };
  for (const char* stage : {"off", "on"}) {
    for (int dim = 1; dim <= 7; ++dim)
      for (const char* q : {"", "4"})
        staged(f32_case("on", true, dim, 1024, 65537, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 97, q), stage);
    for (int m : {1, 9, 33, 129}) staged(f32_case("on", true, 3, m, 5003), stage);
    for (int n : {1, 3, 5, 100}) staged(f32_case("on", true, 2, 70, n), stage);
    staged(f32_case("on", true, 3, 300, 20011, false, Distribution::integers, 4), stage);
    staged(f32_case("on", true, 3, 300, 20011, false, Distribution::duplicates), stage);
    staged(f32_case("on", true, 3, 0, 20011, true, Distribution::integers, 3), stage);
    staged(f32_case("on", true, 2, 300, (1 << 20) + 3, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61), stage);
  }
  return out;
}

// The tensor-core filter with topk 2..32 (each query's keys, tc::offer), forced on: every list
// class of the scan (2, 5, 8, 9, 31, 32), fewer rows than topk (the empty slots), one query, ties
// everywhere (integers, duplicates: v0's very indices), clusters, values far from 0, self-joins,
// several chunks, plain and split TF32 at k = 5, the lists in shared memory (one split) and in
// global memory, and the automatic rule on both sides. The fp32 filter keeps topk 1.
std::vector<V15Case> topk_filter_cases() {
  std::vector<V15Case> out;
  const auto add = [&](int dim, int m, int n, int topk, bool self_join = false, Distribution dist = Distribution::uniform,
                       std::uint32_t integer_max = kDefaultIntegerMax, float offset = 0.f, int checked_rows = 0,
                       std::string split = "", std::string mode = "on", bool expect = true) {
    V15Case c = tc_case(std::move(mode), expect, dim, m, n, self_join, dist, integer_max, offset, checked_rows);
    c.topk = topk;
    c.tc_split = std::move(split);
    out.push_back(c);
  };
  for (int dim : {5, 16})
    for (int topk : {2, 5, 8, 9, 31, 32}) add(dim, 300, 20011, topk);
  for (int n : {1, 3, 31, 33}) add(3, 50, n, 32);
  add(3, 1, 65537, 8);
  add(5, 300, 20011, 5, false, Distribution::integers, 4);
  add(16, 300, 20011, 32, false, Distribution::integers, 3);
  add(3, 300, 20011, 16, false, Distribution::duplicates);
  add(16, 300, 20011, 10, false, Distribution::clusters);
  add(5, 300, 20011, 10, false, Distribution::clusters);
  add(3, 300, 20011, 5, false, Distribution::uniform, kDefaultIntegerMax, 6400.f);
  add(2, 0, 20011, 32, true);
  add(2, 0, 20011, 32, true, Distribution::integers, 3);
  add(5, 0, 1, 5, true);
  add(16, 1024, (1 << 20) + 3, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61);
  add(3, 257, (1 << 20) + 1, 32, false, Distribution::integers, 5, 0.f, 37);
  for (const char* split : {"off", "on"}) {
    add(5, 1024, 65537, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 97, split);
    add(5, 300, 20011, 5, false, Distribution::integers, 4, 0.f, 0, split);
    add(2, 0, 20011, 32, true, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, split);
  }
  // One split (few rows, or more query blocks than the device holds): the lists in shared memory
  // during each chunk, and with shared_lists=off in global memory.
  for (const char* lists : {"on", "off"}) {
    for (int topk : {2, 8, 32}) {
      add(16, 300, 700, topk);
      out.back().shared_lists = lists;
    }
    add(3, 300, 513, 5, false, Distribution::integers, 3);
    out.back().shared_lists = lists;
    add(2, 0, 700, 32, true);
    out.back().shared_lists = lists;
    add(5, 140001, 5003, 8, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61, "off");
    out.back().shared_lists = lists;
    add(4, 140001, 600000, 8, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61);  // several chunks
    out.back().shared_lists = lists;
    for (int n : {1, 31}) {  // fewer rows than topk: empty slots in either kind of list
      add(3, 50, n, 32);
      out.back().shared_lists = lists;
    }
  }
  // The automatic rule for topk > 1: k ≥ 3, m ≥ 1024, n ≥ 2^18, on both sides of each bound.
  const auto rule = [&](bool expect, int dim, int m, int n) {
    add(dim, m, n, 8, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61, "", "auto", expect);
  };
  rule(true, 3, gpu::kTcListMinQueries, gpu::kTcListMinRows);
  rule(true, 16, 1024, 1 << 20);
  rule(false, 2, 1024, gpu::kTcListMinRows);
  rule(false, 3, gpu::kTcListMinQueries - 1, gpu::kTcListMinRows);
  rule(false, 3, 1024, gpu::kTcListMinRows - 1);
  // The fp32 filter, asked for topk 2, keeps the scan.
  V15Case c = f32_case("on", false, 3, 300, 20011);
  c.topk = 2;
  out.push_back(c);
  return out;
}

// The seed (kernels/bruteforce/detail/seed/scan_seed.hpp) forced on, so that it runs at small shapes: every
// dimension it takes (1..9), both register lists (topk 2, 8, 9, 32), self-joins and not, fewer rows
// than a window and than topk (bounds from every row, or none), one query, ties everywhere (the
// bound itself is a tie: integers, duplicates), clusters, values far from 0; and where it must not
// run: k = 10, topk 1 and 33, several chunks, seed=off, and the automatic rule's bounds.
std::vector<V15Case> seed_cases() {
  std::vector<V15Case> out;
  const auto add = [&](int dim, int m, int n, int topk, bool self_join = false, Distribution dist = Distribution::uniform,
                       std::uint32_t integer_max = kDefaultIntegerMax, std::string mode = "on", bool expect = true,
                       int checked_rows = 0, float offset = 0.f) {
    V15Case c = make(dim, m, n, topk, self_join, dist, integer_max, checked_rows);
    c.seed = std::move(mode);
    c.expect_seed = expect;
    c.expect_collect = expect && dim <= gpu::kCollectMaxDim;  // the buffers' automatic rule
    c.offset = offset;
    out.push_back(c);
  };
  for (int dim : {1, 2, 3, 5, 9})
    for (int topk : {2, 8, 9, 32}) {
      add(dim, 0, 5003, topk, true);
      add(dim, 700, 5003, topk);
    }
  add(2, 0, 3001, 32, true, Distribution::integers, 3);
  add(3, 0, 3001, 8, true, Distribution::integers, 2);
  add(3, 500, 20011, 16, false, Distribution::integers, 4);
  add(3, 0, 4000, 8, true, Distribution::duplicates);
  add(3, 600, 4000, 31, false, Distribution::duplicates);
  add(2, 0, 20011, 32, true, Distribution::clusters);
  add(5, 1024, 65537, 8, false, Distribution::clusters, kDefaultIntegerMax, "on", true, 97);
  add(2, 0, 5003, 8, true, Distribution::uniform, kDefaultIntegerMax, "on", true, 0, 6400.f);
  for (int n : {1, 2, 20, 33, 40, 130}) add(2, 0, n, 32, true);
  for (int n : {1, 20, 40}) add(3, 50, n, 32);
  add(3, 1, 5003, 8);
  add(10, 0, 5003, 8, true, Distribution::uniform, kDefaultIntegerMax, "on", false);
  add(2, 0, 5003, 1, true, Distribution::uniform, kDefaultIntegerMax, "on", false);
  add(2, 0, 5003, 33, true, Distribution::uniform, kDefaultIntegerMax, "on", false);
  add(2, 300, (1 << 20) + 3, 8, false, Distribution::uniform, kDefaultIntegerMax, "on", false, 61);  // chunks
  add(2, 0, 5003, 8, true, Distribution::uniform, kDefaultIntegerMax, "off", false);
  // The automatic rule: from kSeedMinQueries queries and kSeedMinRowsPerWindow windows of rows.
  const int rows8 = gpu::kSeedMinRowsPerWindow * gpu::kSeedMinWindow, rows32 = gpu::kSeedMinRowsPerWindow * 128;
  add(2, gpu::kSeedMinQueries, rows8, 8, false, Distribution::uniform, kDefaultIntegerMax, "auto", true);
  add(2, gpu::kSeedMinQueries - 1, rows8, 8, false, Distribution::uniform, kDefaultIntegerMax, "auto", false);
  add(2, 0, rows32, 32, true, Distribution::uniform, kDefaultIntegerMax, "auto", true);
  add(2, 0, rows32 - 1, 32, true, Distribution::uniform, kDefaultIntegerMax, "auto", false);
  return out;
}

// The seed's candidate buffers (kernels/bruteforce/detail/seed/seed_collect.hpp; the cases above take them at
// k <= 5): 1, 2 and 4 queries per thread with queries left over in the last block; several splits
// (few queries, many rows); buffers that fill and are cut back (whole numbers in [0, 3)^2 or
// [0, 2)^3: hundreds of rows tie with the bound at distance 0 or 1); the seeded register lists
// kept by collect=off.
std::vector<V15Case> collect_cases() {
  std::vector<V15Case> out;
  const auto add = [&](int dim, int m, int n, int topk, bool self_join, Distribution dist, std::uint32_t integer_max,
                       std::string collect, std::string queries, float offset = 0.f, int checked_rows = 0) {
    V15Case c = make(dim, m, n, topk, self_join, dist, integer_max, checked_rows);
    c.offset = offset;
    c.seed = "on", c.expect_seed = true;
    c.collect = std::move(collect), c.collect_queries = std::move(queries);
    c.expect_collect = c.collect != "off";
    out.push_back(c);
  };
  for (const char* q : {"1", "2", "4"}) {
    add(2, 0, 5003, 32, true, Distribution::uniform, kDefaultIntegerMax, "auto", q);
    add(3, 1000, 9001, 8, false, Distribution::clusters, kDefaultIntegerMax, "on", q);
    add(5, 0, 4099, 16, true, Distribution::uniform, kDefaultIntegerMax, "auto", q);
    add(2, 0, 3001, 32, true, Distribution::integers, 3, "auto", q);
    add(3, 0, 3001, 8, true, Distribution::integers, 2, "auto", q);
  }
  add(1, 100, 40009, 9, false, Distribution::uniform, kDefaultIntegerMax, "auto", "");  // splits
  add(4, 7, 30011, 32, false, Distribution::integers, 3, "auto", "");
  add(2, 0, 40009, 2, true, Distribution::duplicates, kDefaultIntegerMax, "auto", "");
  add(3, 0, 5003, 8, true, Distribution::uniform, kDefaultIntegerMax, "auto", "", 6400.f);  // values far from 0
  // Exact distances for every pair with the values known (collect_scores=off).
  for (int dim : {2, 5}) {
    add(dim, 0, 5003, 32, true, Distribution::uniform, kDefaultIntegerMax, "auto", "2");
    out.back().collect_scores = "off";
  }
  add(3, 0, 3001, 8, true, Distribution::integers, 2, "auto", "1");
  out.back().collect_scores = "off";
  // collect=on takes the buffers before a chunked copy and before the filters: a join of
  // 4 MiB and more (several chunks otherwise), and a shape the tensor-core filter takes.
  add(2, 300, (1 << 20) + 3, 8, false, Distribution::uniform, kDefaultIntegerMax, "on", "", 0.f, 61);
  add(3, 1024, 1 << 18, 8, false, Distribution::uniform, kDefaultIntegerMax, "on", "", 0.f, 97);
  // Balanced grids (seed_collect.hpp: balance_collect): more query groups than blocks (a block's
  // rows span two groups), and a few groups over many blocks whose ranges cut groups anywhere.
  add(3, 600000, 6007, 8, false, Distribution::uniform, kDefaultIntegerMax, "on", "4", 0.f, 97);
  out.back().collect_balance = "on";
  add(2, 3000, 200003, 16, false, Distribution::clusters, kDefaultIntegerMax, "on", "1", 0.f, 211);
  out.back().collect_balance = "on";
  // The tensor cores' scores (collect_tc=on), with the split TF32 product and without:
  // self-joins, ties that fill the lanes' buffers, values far from 0, several splits of the rows,
  // n not a multiple of 8, m not a multiple of 256, k = 1 .. 5.
  for (const char* split : {"on", "off"}) {
    const auto tc = [&](int dim, int m, int n, int topk, bool self, Distribution dist, std::uint32_t imax,
                        float offset = 0.f, int checked = 0) {
      add(dim, m, n, topk, self, dist, imax, "on", "", offset, checked);
      out.back().collect_tc = "on", out.back().tc_split = split;
    };
    tc(2, 0, 5003, 32, true, Distribution::uniform, kDefaultIntegerMax);
    tc(5, 0, 4099, 16, true, Distribution::uniform, kDefaultIntegerMax);
    tc(3, 1000, 9001, 8, false, Distribution::clusters, kDefaultIntegerMax);
    tc(2, 0, 3001, 32, true, Distribution::integers, 3);
    tc(3, 0, 3001, 8, true, Distribution::integers, 2);
    tc(1, 300, 40009, 9, false, Distribution::uniform, kDefaultIntegerMax);
    tc(4, 7, 30011, 32, false, Distribution::integers, 3);
    tc(3, 0, 5003, 8, true, Distribution::uniform, kDefaultIntegerMax, 6400.f);
    tc(5, 70001, 65537, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 97);
  }
  // The gate (collect_tc=auto) on its shapes: uniform data takes the tensor cores;
  // clustered data and duplicates either. (These 65 537 clustered rows are sparse enough that the
  // gate counted 1.5 % of the queries and took the tensor cores; the 2^20 clustered shapes of
  // the gate's run at cd64c59 (docs/v15.md) counted 70-84 % and kept the CUDA cores.) And off.
  for (Distribution dist : {Distribution::uniform, Distribution::clusters, Distribution::duplicates})
    for (int dim : {4, 5}) {
      add(dim, 65536 + 17, 65537, dim == 4 ? 8 : 5, false, dist, kDefaultIntegerMax, "auto", "", 0.f, 131);
      out.back().expect_gate = true;
      out.back().expect_gate_tc = dist == Distribution::uniform ? 1 : -1;
    }
  add(5, 0, 65536 + 3, 4, true, Distribution::uniform, kDefaultIntegerMax, "auto", "", 0.f, 131);
  out.back().expect_gate = true, out.back().expect_gate_tc = 1;
  add(5, 65536, 65537, 5, false, Distribution::uniform, kDefaultIntegerMax, "auto", "", 0.f, 131);
  out.back().collect_tc = "off";
  add(5, 65536, 65537, 16, false, Distribution::uniform, kDefaultIntegerMax, "auto", "", 0.f, 131);  // topk > 8: no gate
  for (int dim : {2, 3, 5})
    for (int topk : {8, 32}) add(dim, 0, 5003, topk, true, Distribution::uniform, kDefaultIntegerMax, "off", "");
  add(3, 700, 5003, 9, false, Distribution::uniform, kDefaultIntegerMax, "off", "");
  return out;
}

struct Points {
  std::vector<float> queries, references;
  Problem problem;
  explicit Points(const V15Case& c) : references(std::size_t(c.n) * c.dim) {
    const std::uint64_t seed = 1500 + std::uint64_t(c.n) * 7 + std::uint64_t(c.dim) * 131 + std::uint64_t(c.topk);
    generate_points(c.dist, seed, PointSet::references, c.dim, std::size_t(c.n), references.data(), c.integer_max);
    if (!c.self_join) {
      queries.resize(std::size_t(c.m) * c.dim);
      generate_points(c.dist, seed, PointSet::queries, c.dim, std::size_t(c.m), queries.data(), c.integer_max);
    }
    if (c.offset != 0.f) {
      for (float& v : references) v += c.offset;
      for (float& v : queries) v += c.offset;
    }
    if (c.scale != 1.f) {
      for (float& v : references) v *= c.scale;
      for (float& v : queries) v *= c.scale;
    }
    problem = Problem{c.dim, c.m, c.n, c.topk, c.self_join ? references.data() : queries.data(), references.data(),
                      c.self_join};
    if (!c.int8.empty() || !c.tc.empty() || !c.f32.empty() || !c.collect.empty() || !c.tc_tile.empty() || !c.grid.empty())
      problem.values = examine_values(queries.data(), queries.size(), references.data(), references.size());
  }
};

using knn::testing::params_for;  // a version's parameter values: the defaults, then those given

// v15 sums with fused multiply-adds; v0 rounds every product. Equal on integer data, otherwise
// within a few ulps: relative 1e-5 and `abs` (1e-12 for values in [0, 1); among subnormals, a
// few of their fixed spacing).
bool near(float a, float b, double abs = 1e-12) {
  if (a == b) return true;
  return std::fabs(double(a) - double(b)) <= 1e-5 * std::max(std::fabs(double(a)), std::fabs(double(b))) + abs;
}

// Runs v15 on the case and checks the rows against v0's loop: every slot's distance near v0's
// (equal on integer data), each index v0's or another one, listed once, not the query itself,
// whose v0 distance is near the one v0 has at that rank; rows in ascending order. Returns the path.
std::string check_against_v0(const V15Case& c) {
  const VersionDesc* v = Registry::instance().find("v15");
  EXPECT_NE(v, nullptr) << "v15 is not registered in a build that found a CUDA device";
  if (v == nullptr) return {};
  const Points pts(c);
  const Problem& p = pts.problem;
  Environment env;
  env.devices = {discovery().devices[0]};
  // Whole numbers would take the int8 path first: the filter's cases keep it off.
  // The other filters', the grid's and the seed's cases keep the tile filter off, whose rule would come first.
  const bool other_filter = !(c.tc.empty() && c.f32.empty() && c.grid.empty() && c.seed.empty() && c.collect.empty());
  std::map<std::string, std::string> set{
      {"int8", c.int8.empty() && !(c.tc.empty() && c.f32.empty() && c.tc_tile.empty() && c.grid.empty()) ? "off" : c.int8},
      {"grid", c.grid.empty() ? "off" : c.grid}, {"tc_tile", c.tc_tile.empty() && other_filter ? "off" : c.tc_tile}};
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string&>{"tc", c.tc}, {"fp32_filter", c.f32}, {"fp32_queries", c.f32_queries},
        {"fp32_stage", c.f32_stage}, {"tc_split", c.tc_split}, {"shared_lists", c.shared_lists}, {"seed", c.seed},
        {"collect", c.collect}, {"collect_queries", c.collect_queries}, {"collect_scores", c.collect_scores},
        {"collect_tc", c.collect_tc}, {"collect_balance", c.collect_balance}, {"one_stream", c.one_stream},
        {"int8_chunks", c.int8_chunks}, {"host_keys", c.host_keys}, {"int8_ramp", c.int8_ramp},
        {"tile_splits", c.tile_splits}, {"ramp", c.ramp}})
    if (!value.empty()) set[name] = value;
  if (set["int8"].empty()) set.erase("int8");
  if (set["tc_tile"].empty()) set.erase("tc_tile");
  env.params = params_for("v15", set);
  if (const auto reason = v->supports(p, env)) {
    ADD_FAILURE() << "v15 skipped " << c.name() << ": " << *reason;
    return {};
  }
  std::vector<int> rows;
  const int step = c.checked_rows > 0 ? std::max(1, p.m / c.checked_rows) : 1;
  for (int q = 0; q < p.m; q += step) rows.push_back(q);
  if (rows.back() != p.m - 1) rows.push_back(p.m - 1);

  std::vector<std::int32_t> want_i(p.result_slots(), -7), got_i(p.result_slots(), -7);
  std::vector<float> want_d(p.result_slots(), -1.f), got_d(p.result_slots(), -1.f);
  for (int q : rows) bruteforce_one_query(p, q, Neighbors{want_i.data(), want_d.data()});
  TimingSink timing;
  RunContext ctx{timing, env, {}, {}};
  v->make()->query(p, Neighbors{got_i.data(), got_d.data()}, ctx);
  resolve_path(ctx);  // v15 formats its path after the call
  const bool int8 = ctx.path.find("exact integer path") != std::string::npos;
  EXPECT_EQ(int8, !c.int8.empty()) << c.name() << ": the int8 path " << (int8 ? "ran" : "did not run") << ": " << ctx.path;
  const bool tc = ctx.path.find("tensor-core filter:") != std::string::npos;
  if (!c.grid.empty())
    EXPECT_EQ(ctx.path.rfind("query grid:", 0) == 0, c.expect_grid)
        << c.name() << ": the query grid " << (c.expect_grid ? "did not run" : "ran") << ": " << ctx.path;
  if (!c.tc_tile.empty())
    EXPECT_EQ(ctx.path.rfind("tile filter:", 0) == 0, c.expect_tile)
        << c.name() << ": the tile filter " << (c.expect_tile ? "did not run" : "ran") << ": " << ctx.path;
  if (ctx.path.rfind("tile filter:", 0) == 0) {
    // Row splits where asked for with rows for two stages (128 rows each) or more, and by the rule
    // wherever two blocks of queries or fewer meet 8192 rows or more.
    const bool split = ctx.path.find("splits of each chunk's rows (keys merged in global memory)") != std::string::npos;
    const int knob = c.tile_splits.empty() ? 0 : std::stoi(c.tile_splits);
    if (knob == 1)
      EXPECT_FALSE(split) << c.name() << ": " << ctx.path;
    else if ((knob > 1 && c.n >= 256) || (knob == 0 && c.m <= 2 * gpu::kTileBlockQueries && c.n >= 8192))
      EXPECT_TRUE(split) << c.name() << ": " << ctx.path;
    // Split by the rule from 32 blocks of queries: the device filled twice over (tile_waves=0).
    if (knob == 0 && split && (c.m + gpu::kTileBlockQueries - 1) / gpu::kTileBlockQueries >= gpu::kTileTwoWaveBlocks)
      EXPECT_NE(ctx.path.find(", 2 times the blocks the device holds,"), std::string::npos) << c.name() << ": " << ctx.path;
  }
  EXPECT_EQ(tc, c.expect_tc) << c.name() << ": the tensor-core filter " << (tc ? "ran" : "did not run") << ": " << ctx.path;
  if (!c.f32.empty()) {
    const bool f32 = ctx.path.find("fp32 filter:") != std::string::npos;
    EXPECT_EQ(f32, c.expect_f32) << c.name() << ": the fp32 filter " << (f32 ? "ran" : "did not run") << ": " << ctx.path;
    if (f32) {
      EXPECT_NE(ctx.path.find(fmt::format("{} queries per thread", c.f32_queries.empty() ? "8" : c.f32_queries)),
                std::string::npos)
          << ctx.path;
      // The shapes of 8 MiB and more, from 64 queries, are cut into several chunks (V15Plan checks the plan).
      if (std::size_t(c.n) * c.dim * 4 >= 2 * gpu::kChunkBytes && c.m >= gpu::kRampMinQueries)
        EXPECT_NE(ctx.path.find("chunks of "), std::string::npos) << ctx.path;
      const int per_thread = c.f32_queries.empty() ? gpu::kFp32Queries : std::stoi(c.f32_queries);
      const bool many = (c.m + per_thread - 1) / per_thread >= gpu::kFp32StageMinSlots;
      const bool staged = ctx.path.find("rows staged in shared memory") != std::string::npos;
      EXPECT_EQ(staged, c.f32_stage == "on" || (c.f32_stage.empty() && many)) << ctx.path;
    }
  }
  // shared_lists=on: the lists are in shared memory wherever the plan made one split (the
  // shapes below with n <= 767 rows on any device; the larger ones on an H100); off: never.
  if (!c.shared_lists.empty()) {
    const bool one_split = ctx.path.find(" x 1 split x") != std::string::npos;
    EXPECT_EQ(ctx.path.find("in shared memory during each chunk") != std::string::npos, c.shared_lists == "on" && one_split)
        << ctx.path;
    if (c.n <= 767) EXPECT_TRUE(one_split) << ctx.path;
  }
  if (!c.seed.empty())
    EXPECT_EQ(ctx.path.find("; seeded: ") != std::string::npos, c.expect_seed)
        << c.name() << ": the seed " << (c.expect_seed ? "did not run" : "ran") << ": " << ctx.path;
  if (!c.seed.empty()) {
    EXPECT_EQ(ctx.path.find("candidate buffers:") != std::string::npos, c.expect_collect)
        << c.name() << ": the candidate buffers " << (c.expect_collect ? "did not run" : "ran") << ": " << ctx.path;
    if (c.expect_collect && c.collect_balance == "on")
      EXPECT_NE(ctx.path.find("sharing the rows of all groups equally"), std::string::npos) << ctx.path;
    if (c.expect_collect && !c.collect_queries.empty())
      EXPECT_NE(ctx.path.find(fmt::format("; {} quer", c.collect_queries)), std::string::npos) << ctx.path;
    const bool scored = c.expect_collect && !c.collect.empty() && c.collect_scores != "off";
    const bool tc_scores = ctx.path.find("TF32 tensor-core scores") != std::string::npos;
    const bool chosen = ctx.path.find("; tensor cores chosen") != std::string::npos;
    if (c.expect_collect) {
      EXPECT_EQ(ctx.path.find("fp32 scores") != std::string::npos, scored && !tc_scores) << ctx.path;
      EXPECT_EQ(tc_scores, scored && (c.collect_tc == "on" || chosen)) << ctx.path;
      EXPECT_EQ(ctx.path.find("; tensor cores ") != std::string::npos, c.expect_gate) << ctx.path;
      if (c.expect_gate && c.expect_gate_tc >= 0) EXPECT_EQ(chosen, c.expect_gate_tc == 1) << ctx.path;
    }
    // Whole numbers with a span of 2 or 3 in a self-join (one split): more rows tie at the bound than
    // a buffer holds. (The join of 7 queries spreads its ties over 14 splits' buffers instead.)
    if (c.expect_collect && c.self_join && c.dist == Distribution::integers && c.integer_max <= 3)
      EXPECT_EQ(ctx.path.find(" 0 buffers cut back"), std::string::npos) << ctx.path;
  }
  if (!c.host_keys.empty() && ctx.path.find(" merged by atomicMin") != std::string::npos)
    EXPECT_EQ(ctx.path.find("unpacked on the host") != std::string::npos,
              c.host_keys == "on" || (c.host_keys == "auto" && gpu::host_keys_taken(p.m, p.reference_floats() * sizeof(float), Mode::automatic)))
        << c.name() << ": " << ctx.path;
  if (c.one_stream == "on" && ctx.path.find(" x 1 chunk (") != std::string::npos)
    EXPECT_NE(ctx.path.find("copy and search on one stream"), std::string::npos) << c.name() << ": " << ctx.path;
  // The int8 path's reference chunks: as many as the plan's boundaries (one for a self-join), the
  // copy overlapped exactly when there are several, and the phases that do not overlap reported.
  const bool overlapped = ctx.path.find("(copy overlapped)") != std::string::npos;
  if (int8 && !c.int8_chunks.empty()) {
    const int asked = c.int8_chunks == "auto" ? gpu::kInt8ChunksAuto : std::stoi(c.int8_chunks);
    const bool ramp = c.int8_ramp != "off";
    const int chunks = int(gpu::plan_int8(p, Mode::on, asked, ramp).chunk_rows.size()) - 1;
    const std::vector<int> equal = gpu::int8_chunk_rows(p.n, asked);
    if (asked > 0)
      EXPECT_EQ(chunks, c.self_join ? 1 : int(ramp && equal.size() > 2 ? gpu::int8_halve_first(equal).size() : equal.size()) - 1)
          << ctx.path;
    if (c.int8_chunks == "auto") EXPECT_GT(chunks, 1) << ctx.path;  // the rule's case is 60 MiB of references
    EXPECT_NE(ctx.path.find(fmt::format("references in {} chunk{}", chunks, chunks == 1 ? " (" : "s of up to")), std::string::npos)
        << c.name() << ": " << ctx.path;
    EXPECT_EQ(overlapped, chunks > 1) << ctx.path;
  }
  const auto phases = overlapped ? std::vector<const char*>{"h2d", "search", "d2h"}
                      : int8     ? std::vector<const char*>{"h2d", "convert", "gemm", "select", "d2h"}
                                 : std::vector<const char*>{"h2d", "kernel", "merge", "d2h"};
  for (const char* phase : phases) EXPECT_EQ(timing.phases().count(phase), 1u) << phase;

  // v0 sums integer squares in float: exact while every distance stays below 2^24.
  const double largest = double(c.integer_max - 1) * double(c.integer_max - 1) * c.dim;
  const bool exact = c.dist == Distribution::integers && largest < 16777216.0 && c.scale == 1.f;
  // Scaled values: 1e-12 scaled by the squares, and 4 subnormal spacings (v0's three rounded squares
  // and v15's fused chain each err by at most 1.5 of them; sums of subnormals are exact).
  const double abs = 1e-12 * double(c.scale) * double(c.scale) + (c.scale == 1.f ? 0.0 : 4.0 * std::numeric_limits<float>::denorm_min());
  for (int q : rows) {
    std::set<std::int32_t> seen;
    for (int s = 0; s < p.topk; ++s) {
      const std::size_t at = std::size_t(q) * p.topk + s;
      const std::int32_t gi = got_i[at], wi = want_i[at];
      const float gd = got_d[at], wd = want_d[at];
      const std::string where = fmt::format("{} query {} rank {} ({})", c.name(), q, s, ctx.path);
      if (std::isinf(wd)) {  // no candidate left: v0's empty slot
        EXPECT_TRUE(std::isinf(gd) && gi == wi) << where << ": (" << gi << ", " << gd << ") for (" << wi << ", inf)";
        if (!(std::isinf(gd) && gi == wi)) return ctx.path;
        continue;
      }
      const bool valid = gi >= 0 && gi < p.n && !(p.self_join && gi == q) && seen.insert(gi).second;
      EXPECT_TRUE(valid) << where << ": index " << gi << " out of range, the query itself or listed twice";
      if (!valid) return ctx.path;
      const float true_d = squared_distance(p.queries + std::size_t(q) * p.dim,
                                            p.references + std::size_t(gi) * p.dim, p.dim);
      // Exact data: v0's very list, the smaller index first among equal distances.
      const bool ok = exact ? gd == wd && true_d == wd && gi == wi
                            : near(gd, wd, abs) && near(true_d, wd, abs) && near(gd, true_d, abs);
      EXPECT_TRUE(ok) << where << ": (" << gi << ", " << gd << ") for v0's (" << wi << ", " << wd
                      << "), v0 distance of " << gi << " is " << true_d;
      if (!ok) return ctx.path;
      if (s > 0) {
        const float prev = got_d[at - 1];
        const bool ordered = prev < gd || (prev == gd && got_i[at - 1] < gi);
        EXPECT_TRUE(ordered) << where << ": after (" << got_i[at - 1] << ", " << prev << ")";
        if (!ordered) return ctx.path;
      }
    }
  }
  return ctx.path;
}

// v15.one_stream=on: every one-chunk shape of the lists above that is no larger than 65 537 rows
// (the scan's register lists, heaps, merges, self-joins, n = 1, ties), the seed's and the
// buffers', with the search on the copy stream; the answers must not change.
std::vector<V15Case> one_stream_cases() {
  std::vector<V15Case> out;
  for (auto list : {v15_cases(), seed_cases(), collect_cases()})
    for (V15Case c : list)
      if (c.n <= 65537 && std::size_t(c.n) * c.dim <= (std::size_t(1) << 20)) {
        c.one_stream = "on";
        out.push_back(c);
      }
  return out;
}

// v15.host_keys off and on: every topk-1 shape of the lists above (the scan's keys unpacked by a
// kernel, or downloaded and unpacked on the host, also past the automatic rule's 256 KiB of
// references), and 5000 queries (past its 4096) with host_keys on and at the rule (off there).
std::vector<V15Case> host_keys_cases() {
  std::vector<V15Case> out;
  std::vector<V15Case> shapes = v15_cases();
  shapes.push_back(make(3, 5000, 1000, 1));
  for (const V15Case& base : shapes)
    if (base.topk == 1 && base.tc.empty() && base.f32.empty())
      for (const char* mode : {"off", "on", "auto"}) {
        V15Case c = base;
        c.host_keys = mode;
        out.push_back(c);
      }
  return out;
}

// The tile filter (kernels/bruteforce/detail/filters/tc_tile.hpp), forced on: every k it takes (1..16),
// topk 1..16, query tiles, warps and blocks cut short (m = 1, 7, 17, 129, 511, 513), rows not a
// multiple of the 8-row group or of a 128-row stage, fewer rows than topk, one row, ties everywhere
// (integers, duplicates), clusters, values far from 0, a wide band (whole numbers up to 10^6), several
// chunks, self-joins; the automatic rule on both sides.
std::vector<V15Case> tile_cases() {
  std::vector<V15Case> out;
  const auto add = [&](int dim, int m, int n, int topk, bool self_join = false, Distribution dist = Distribution::uniform,
                       std::uint32_t integer_max = kDefaultIntegerMax, float offset = 0.f, int checked_rows = 0,
                       std::string mode = "on", bool expect = true) {
    V15Case c = make(dim, m, n, topk, self_join, dist, integer_max, checked_rows);
    c.tc_tile = std::move(mode);
    c.expect_tile = expect;
    c.offset = offset;
    out.push_back(c);
  };
  for (int dim : {1, 2, 3, 5, 7, 8, 9, 12, 15, 16})
    for (int topk : {1, 5, 16}) add(dim, 600, 5003, topk);
  for (int m : {1, 7, 17, 129, 511, 513}) add(12, m, 2049, 5);
  for (int n : {1, 2, 3, 7, 8, 9, 127, 128, 129}) add(9, 300, n, 5);
  for (int dim : {4, 12, 16}) {
    add(dim, 700, 20011, 5, false, Distribution::integers, 4);
    add(dim, 700, 20011, 8, false, Distribution::duplicates);
    add(dim, 700, 20011, 10, false, Distribution::clusters);
    add(dim, 700, 20011, 5, false, Distribution::uniform, kDefaultIntegerMax, 6400.f);
    add(dim, 700, 20011, 5, false, Distribution::integers, 1000000);
    add(dim, 0, 20011, 5, true);
    add(dim, 0, 20011, 16, true, Distribution::integers, 3);
  }
  add(16, 1100, (1 << 17) + 3, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 61);  // 2 chunks
  add(8, 1100, (1 << 18) + 5, 5, false, Distribution::integers, 1000, 0.f, 61);                 // seed 302's values
  add(12, 600, 5003, 5, false, Distribution::integers, 1);        // every value 0: H = 0, s = 1, every distance ties
  add(16, 600, 5003, 5, false, Distribution::integers, 2, 6400.f);  // two values far from 0
  add(12, 1 << 19, 1 << 17, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 37, "auto", true);
  add(12, (1 << 19) - 1, 1 << 17, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 37, "auto", true);  // one split: 1024 blocks fill the device
  // The rule: from k 5, 1024 queries and 2^17 rows (2^16 at topk 1).
  add(8, 1024, 1 << 17, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "auto", true);
  add(8, 1024, (1 << 17) - 1, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "auto", false);
  add(5, 1024, 1 << 16, 1, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "auto", true);
  add(16, 1024, 1 << 16, 1, false, Distribution::clusters, kDefaultIntegerMax, 0.f, 0, "auto", true);
  add(5, 1023, 1 << 16, 1, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "auto", false);
  add(5, 1024, (1 << 16) - 1, 1, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "auto", false);
  add(4, 4096, 1 << 16, 1, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "auto", false);
  // Row splits (keys merged in global memory: atomicMin at topk 1, tc::offer's cascades above), several
  // chunks with the ramp or without, one query block or two, ties among splits (whole numbers,
  // duplicates), clusters, self-joins, lists that fill (topk 16 against 4001 rows in 32 splits).
  const auto split = [&](int dim, int m, int n, int topk, std::string splits, Distribution dist = Distribution::uniform,
                         std::uint32_t integer_max = kDefaultIntegerMax, int checked = 0, bool self_join = false, std::string ramp = "") {
    add(dim, m, n, topk, self_join, dist, integer_max, 0.f, checked);
    out.back().tile_splits = std::move(splits);
    out.back().ramp = std::move(ramp);
  };
  split(3, 1024, (1 << 20) + 3, 1, "", Distribution::uniform, kDefaultIntegerMax, 61);  // case 10's shape: 12 MiB
  split(3, 1024, (1 << 20) + 3, 1, "", Distribution::uniform, kDefaultIntegerMax, 61, false, "off");  // equal chunks
  split(3, 1, 300007, 1, "");
  split(2, 37, (1 << 21) + 1, 1, "", Distribution::integers, 6, 37);
  split(3, 700, 400009, 1, "", Distribution::clusters, kDefaultIntegerMax, 53);
  split(4, 513, 200003, 1, "", Distribution::duplicates, kDefaultIntegerMax, 57);
  split(3, 0, 20011, 1, "", Distribution::uniform, kDefaultIntegerMax, 0, true);
  split(3, 1024, 400009, 1, "1", Distribution::uniform, kDefaultIntegerMax, 41);
  split(5, 513, 100003, 1, "7", Distribution::integers, 3, 47);
  split(1, 100, 70001, 1, "4096");
  split(12, 1, 300007, 1, "");
  split(16, 3, 200003, 1, "", Distribution::integers, 5);
  split(7, 600, 50021, 5, "8");
  split(5, 1024, (1 << 20) + 3, 5, "", Distribution::uniform, kDefaultIntegerMax, 61);
  split(12, 700, 200003, 16, "", Distribution::duplicates, kDefaultIntegerMax, 53);
  split(8, 513, 100003, 8, "", Distribution::integers, 4, 47);
  split(9, 0, 20011, 5, "", Distribution::uniform, kDefaultIntegerMax, 0, true);
  split(16, 1, 300007, 10, "");
  split(5, 300, 4001, 16, "4096", Distribution::clusters);
  split(3, 100, 9, 5, "7");
  // From 32 blocks of queries the rule fills the device twice over (v15.tile_waves=0): nearest, lists with
  // ties, clusters that fill topk 16.
  split(7, 16384, 300007, 1, "", Distribution::uniform, kDefaultIntegerMax, 61);
  split(8, 16385, 200003, 8, "", Distribution::integers, 4, 53);
  split(16, 20000, 150001, 16, "", Distribution::clusters, kDefaultIntegerMax, 47);
  add(12, 600, 5003, 17, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "on", false);  // topk over 16
  add(17, 600, 5003, 5, false, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "on", false);   // k over 16
  return out;
}

// The query grid (kernels/bruteforce/detail/grid/query_grid.hpp), forced on: k 1..3, topk 1..32, one
// query to 2048 (every cell count up to 512), fewer rows than topk, one row, ties everywhere
// (whole numbers, duplicates, every value equal: flat dimensions), clusters, values far from 0, whole
// numbers up to 10^6, several chunks; the automatic rule on both sides and where it does not apply.
std::vector<V15Case> grid_cases() {
  std::vector<V15Case> out;
  const auto add = [&](int dim, int m, int n, int topk, Distribution dist = Distribution::uniform,
                       std::uint32_t integer_max = kDefaultIntegerMax, float offset = 0.f, int checked_rows = 0,
                       std::string mode = "on", bool expect = true, bool self_join = false) {
    V15Case c = make(dim, m, n, topk, self_join, dist, integer_max, checked_rows);
    c.grid = std::move(mode);
    c.expect_grid = expect;
    c.offset = offset;
    out.push_back(c);
  };
  for (int dim : {1, 2, 3})
    for (int topk : {1, 2, 5, 32}) add(dim, 600, 5003, topk);
  for (int m : {1, 2, 7, 63, 129, 1024, 2048}) add(3, m, 20011, 1);
  for (int m : {2, 50, 1025}) add(2, m, 20011, 4);
  for (int n : {1, 2, 3, 7, 100}) {
    add(2, 70, n, 1);
    add(3, 70, n, 5);
  }
  for (int dim : {2, 3})
    for (int topk : {1, 8}) {
      add(dim, 300, 20011, topk, Distribution::integers, 4);
      add(dim, 300, 20011, topk, Distribution::duplicates);
      add(dim, 300, 20011, topk, Distribution::clusters);
      add(dim, 300, 20011, topk, Distribution::uniform, kDefaultIntegerMax, 6400.f);
      add(dim, 300, 20011, topk, Distribution::integers, 1000000);
      add(dim, 300, 20011, topk, Distribution::integers, 1);  // every value 0: one cell, every distance ties
    }
  add(1, 300, 20011, 3, Distribution::integers, 10);
  add(3, 1024, (1 << 20) + 3, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 61);                 // case 10's shape
  add(3, 1024, (1 << 20) + 3, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 61, "auto", false);  // auto: not at k 3
  add(2, 257, (1 << 19) + 1, 4, Distribution::clusters, kDefaultIntegerMax, 0.f, 41);                // several chunks
  add(3, 2048, (1 << 19) + 5, 1, Distribution::integers, 10, 0.f, 41);
  for (int dim : {1, 2}) add(dim, gpu::kGridMinQueries, gpu::kGridMinRows, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 61, "auto", true);
  add(2, gpu::kGridMinQueries - 1, gpu::kGridMinRows, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 61, "auto", false);
  add(2, gpu::kGridMinQueries, gpu::kGridMinRows - 1, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 61, "auto", false);
  add(2, gpu::kGridMinQueries, gpu::kGridMinRows, 2, Distribution::uniform, kDefaultIntegerMax, 0.f, 61, "auto", false);
  add(4, 600, 5003, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "on", false);   // k over 3
  add(3, 600, 5003, 33, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "on", false);  // topk over 32
  add(3, 2049, 5003, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "on", false);  // m over 2048
  add(3, 0, 5003, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 0, "on", false, true);  // a self-join
  // Values near 1e-20: squared distances among the subnormals (the reach's 2^-148 term), at every
  // k, at topk 1, 4 and 32 (ties at the bounds), and under auto.
  for (int dim : {1, 2, 3})
    for (int topk : {1, 4, 32}) {
      add(dim, 600, 20011, topk);
      out.back().scale = 1e-20f;
    }
  add(2, gpu::kGridMinQueries, gpu::kGridMinRows, 1, Distribution::uniform, kDefaultIntegerMax, 0.f, 61, "auto", true);
  out.back().scale = 1e-20f;
  return out;
}

class GpuV15 : public ::testing::TestWithParam<V15Case> {};

TEST_P(GpuV15, MatchesV0) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const std::string path = check_against_v0(GetParam());
  EXPECT_FALSE(path.empty());
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuV15, ::testing::ValuesIn(v15_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuInt8, GpuV15, ::testing::ValuesIn(int8_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuInt8Chunks, GpuV15, ::testing::ValuesIn(int8_chunk_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuTc, GpuV15, ::testing::ValuesIn(tc_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuFp32, GpuV15, ::testing::ValuesIn(f32_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuFilterTopk, GpuV15, ::testing::ValuesIn(topk_filter_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuSeed, GpuV15, ::testing::ValuesIn(seed_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuCollect, GpuV15, ::testing::ValuesIn(collect_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuTile, GpuV15, ::testing::ValuesIn(tile_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuGrid, GpuV15, ::testing::ValuesIn(grid_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuOneStream, GpuV15, ::testing::ValuesIn(one_stream_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });
INSTANTIATE_TEST_SUITE_P(GpuHostKeys, GpuV15, ::testing::ValuesIn(host_keys_cases()),
                         [](const ::testing::TestParamInfo<V15Case>& i) { return i.param.name(); });

// Fractional values, or whole ones over a span of 256, keep the fused scan even when asked for the
// int8 path, and the path line says why.
TEST(GpuV15Int8, StaysOffWhereItWouldNotBeExact) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  V15Case wide = int8_case("on", 64, 50, 3000, 10, false, 257);
  wide.int8 = "";  // checked below with the parameter set by hand: the scan must run
  Points pts(wide);
  pts.problem.values = examine_values(pts.queries.data(), pts.queries.size(), pts.references.data(), pts.references.size());
  std::vector<std::int32_t> idx(pts.problem.result_slots());
  std::vector<float> dist(pts.problem.result_slots());
  TimingSink timing;
  Environment env;
  env.devices = {disc.devices[0]};
  env.params = params_for("v15", {{"int8", "on"}});
  RunContext ctx{timing, env, {}, {}};
  Registry::instance().find("v15")->make()->query(pts.problem, Neighbors{idx.data(), dist.data()}, ctx);
  resolve_path(ctx);  // v15 formats its path after the call
  EXPECT_NE(ctx.path.find("exact int8 path not taken: values span 0 .. 256, more than 256 integers"), std::string::npos)
      << ctx.path;
}

// The path names the merge each shape takes: atomicMin for topk 1, a sort for split partial
// lists, nothing when each query has one list.
TEST(GpuV15Paths, MergeFollowsTheShape) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  EXPECT_NE(check_against_v0(make(3, 7, 65537, 1)).find("merged by atomicMin"), std::string::npos);
  EXPECT_NE(check_against_v0(make(3, 7, 65537, 8)).find("merged by a segmented sort"), std::string::npos);
  // One query's 1024 heaps of 64 (8 splits x 128 threads): one reduction pass before the sort, on
  // data with ties; 1024 queries are many segments already.
  const std::string one = check_against_v0(make(3, 1, 65537, 64, false, Distribution::integers, 4));
  EXPECT_NE(one.find("merged by a segmented sort after 1 pass that keeps the best 64 of every 2048"), std::string::npos) << one;
  const std::string many = check_against_v0(make(3, 1024, 65537, 64));
  EXPECT_NE(many.find("merged by a segmented sort;"), std::string::npos) << many;
  const std::string big = check_against_v0(make(2, 1 << 20, 300, 8, false, Distribution::uniform, 100, 50));
  EXPECT_NE(big.find("written in place"), std::string::npos) << big;
}

TEST(GpuV15Harness, PassesTheRunnersValidation) {
  const auto& disc = discovery();
  if (disc.devices.empty()) GTEST_SKIP() << "no CUDA device (" << disc.note << "): GPU test skipped, not run";
  const VersionDesc* v = Registry::instance().find("v15");
  ASSERT_NE(v, nullptr);
  knn::testing::Dataset d(3, 1000, 70001, 33, Distribution::duplicates, 15);
  Environment env;
  env.devices = {disc.devices[0]};
  env.params = params_for("v15");
  const Result r = knn::testing::run_once(*v, d, env);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
}

TEST(V15Supports, SkipsWithReasons) {
  const VersionDesc* v = Registry::instance().find("v15");
  if (v == nullptr) GTEST_SKIP() << "v15 is built only with CUDA: not registered in this build";
  EXPECT_TRUE(v->self_join);
  EXPECT_EQ(v->family, Family::gpu);
  std::vector<float> points(3 * 3000, 0.5f);
  Problem p{3, 3000, 3000, 2048, points.data(), points.data()};
  Environment env;
  env.params = params_for("v15");
  EXPECT_EQ(v->supports(p, env).value_or(""), "no CUDA device");
  DeviceInfo fake;
  fake.ordinal = 0;
  fake.sm_count = 132;
  env.devices = {fake};
  EXPECT_FALSE(v->supports(p, env).has_value()) << v->supports(p, env).value_or("");
  p.topk = 2049;
  EXPECT_NE(v->supports(p, env).value_or("").find("topk 2049 over v15's limit of 2048"), std::string::npos);
  p.topk = 5;
  p.self_join = true;
  p.m = 2999;
  EXPECT_NE(v->supports(p, env).value_or("").find("m == n"), std::string::npos);
  p.self_join = false;
  // Bad values of the chunking and merge parameters never reach the version: their declarations refuse them.
  for (const auto& [name, bad] : std::vector<std::pair<const char*, const char*>>{
           {"merge_runs", "2"}, {"min_groups", "-1"}, {"ramp", "yes"}, {"ramp", "0"}, {"taper", "-1"}, {"tile_splits", "-1"},
           {"tile_splits", "4097"}, {"tile_splits", "auto"}})
    EXPECT_THROW(params_for("v15", {{name, bad}}), ParamError) << name << "=" << bad;
  EXPECT_FALSE(v->supports(p, env).has_value());
  p.self_join = true;
  // What one call allocates grows with the answers it keeps.
  p.m = 3000;
  const std::size_t five = v->device_bytes(p, env);
  p.topk = 500;
  EXPECT_GT(v->device_bytes(p, env), five + 3000u * 495 * 8 - 1);
}

// The chunk boundaries: from 0 to n, increasing, interior ones on 4-row groups; one chunk when asked.
// Without the ramp: at most kMaxChunks equal chunks, each at least kChunkBytes when there are several.
// With it: the same number of chunks or more, the first about kFirstChunkBytes, each ramp chunk twice
// the one before, at most kMaxRampChunks of them besides kMaxChunks others.
TEST(V15Plan, ChunksCoverTheRowsOnGroupBoundaries) {
  for (int n : {1, 2, 3, 4, 5, 100, 65537, 1 << 20, (1 << 24) + 3})
    for (int dim : {1, 3, 16, 128})
      for (bool single : {false, true})
        for (bool ramp : {false, true}) {
          const std::vector<int> rows = gpu::plan_chunks(n, std::size_t(dim) * 4, single, ramp);
          const int chunks = int(rows.size()) - 1;
          const std::string where = fmt::format("n {} dim {} single {} ramp {}", n, dim, single, ramp);
          ASSERT_GE(chunks, 1) << where;
          EXPECT_LE(chunks, single ? 1 : gpu::kMaxChunks + (ramp ? gpu::kMaxRampChunks : 0)) << where;
          EXPECT_EQ(rows.front(), 0) << where;
          EXPECT_EQ(rows.back(), n) << where;
          for (int c = 0; c < chunks; ++c) {
            EXPECT_LT(rows[c], rows[c + 1]) << where << " chunk " << c;
            if (c > 0) EXPECT_EQ(rows[c] % gpu::kScanGroup, 0) << where << " chunk " << c;
          }
          const std::vector<int> equal = gpu::plan_chunks(n, std::size_t(dim) * 4, single, false);
          const int equal_chunks = int(equal.size()) - 1;
          if (!ramp && chunks > 1)
            EXPECT_GE(std::size_t(n) * dim * 4 / chunks + dim * 4 * gpu::kScanGroup, gpu::kChunkBytes) << where;
          if (ramp) EXPECT_GE(chunks, equal_chunks) << where;
          if (ramp && chunks > equal_chunks) {
            const std::size_t group_bytes = std::size_t(dim) * 4 * gpu::kScanGroup;
            EXPECT_EQ(std::size_t(rows[1]) / gpu::kScanGroup, std::max<std::size_t>(1, gpu::kFirstChunkBytes / group_bytes))
                << where;
            EXPECT_EQ(rows[2] - rows[1], 2 * rows[1]) << where;  // the second ramp chunk doubles the first
            // No chunk outgrows the equal plan's largest by more than half of it.
            EXPECT_LE(gpu::largest_chunk(rows), gpu::largest_chunk(equal) * 3 / 2 + gpu::kScanGroup) << where;
          }
        }
  // 64 MiB of references (case 11): the most equal chunks; 12 MiB (case 10): three equal ones, or
  // with the ramp 0.5, 1, 2 and 4 MiB (in whole 4-row groups) and the last 4.5 MiB.
  EXPECT_EQ(gpu::plan_chunks(1 << 20, 64, false, false).size(), std::size_t(gpu::kMaxChunks) + 1);
  EXPECT_EQ(gpu::plan_chunks(1 << 20, 12, false, false).size(), 4u);
  EXPECT_EQ(gpu::plan_chunks(1 << 20, 12, false), (std::vector<int>{0, 43688, 131064, 305816, 655320, 1 << 20}));
  EXPECT_EQ(gpu::largest_chunk({0, 3, 10, 12}), 7);
}

// The thread layout covers every query once, fills the device with splits when queries are few,
// and keeps the partial entries under the budget.
// The merge's reduction passes: only with fewer queries than SMs and more than kMergeRunsLeft runs
// a query; each pass shrinks a query's entries to its runs' best topk; the last sort is left with
// at most kMergeRunsLeft runs' worth and at least topk entries.
TEST(V15Plan, MergePassesLeaveAFewRunsPerQuery) {
  EXPECT_EQ(gpu::merge_passes(1, 1024LL * 64, 64, 132), (std::vector<long long>{65536}));  // 1 query, n 65537, topk 64
  EXPECT_EQ(gpu::merge_passes(1, 16384LL * 64, 64, 132), (std::vector<long long>{1048576, 32768}));
  EXPECT_TRUE(gpu::merge_passes(132, 16384LL * 64, 64, 132).empty());  // a segment per SM already
  EXPECT_TRUE(gpu::merge_passes(1, 4 * gpu::kMergeMinRun, 8, 132).empty());
  EXPECT_EQ(gpu::merge_run_length(8), gpu::kMergeMinRun);
  EXPECT_EQ(gpu::merge_run_length(2048), 16LL * 2048);
  for (int topk : {2, 8, 33, 100, 1024, 2048})
    for (long long per : {1LL, 4097LL, 65536LL * 3 + 7, 1LL << 24, 1LL << 30})
      for (int m : {1, 7, 131}) {
        const long long run = gpu::merge_run_length(topk);
        const auto passes = gpu::merge_passes(m, per * topk, topk, 132);
        long long left = per * topk;
        for (const long long start : passes) {
          EXPECT_EQ(start, left);
          EXPECT_GT(start, gpu::kMergeRunsLeft * run);
          const long long next = (start + run - 1) / run * topk;
          EXPECT_LT(next, start);
          left = next;
        }
        EXPECT_LE(left, std::max(per * topk, gpu::kMergeRunsLeft * run)) << topk << " " << per << " " << m;
        if (!passes.empty()) EXPECT_LE(left, gpu::kMergeRunsLeft * run);
        EXPECT_GE(left, topk);
      }
}

// The heaps' minimum (one query per thread, one chunk): up to topk groups a thread while every SM
// keeps a block, never below the base minimum, and only with fewer queries than SMs.
TEST(V15Plan, HeapsScanMoreRowsPerThreadWhileEverySmKeepsABlock) {
  const int sms = 132, resident = sms * 8;
  const auto base = [&](int m, int n) { return gpu::plan_scan(m, n, 3, 64, 1, resident, true, true, true, gpu::kMinGroupsPerThread); };
  EXPECT_EQ(gpu::heap_min_groups(base(7, 1 << 20), 7, 64, sms, 16), 64);  // 262144 groups / (16 row threads x 132)
  EXPECT_EQ(gpu::heap_min_groups(base(7, 1 << 18), 7, 64, sms, 16), 31);
  EXPECT_EQ(gpu::heap_min_groups(base(7, 16384), 7, 64, sms, 16), 16);
  EXPECT_EQ(gpu::heap_min_groups(base(1, 1 << 20), 1, 64, sms, 16), 16);  // 128 row threads: 15 would leave 132 blocks
  EXPECT_EQ(gpu::heap_min_groups(base(132, 1 << 20), 132, 64, sms, 16), 16);
  EXPECT_EQ(gpu::heap_min_groups(base(7, 1 << 20), 7, 8, sms, 16), 16);
  for (int m : {1, 2, 7, 31, 100})
    for (int n : {1, 1000, 65537, 1 << 18, 1 << 22})
      for (int topk : {33, 64, 100, 1024, 2048}) {
        const gpu::ScanPlan b = gpu::plan_scan(m, n, 3, topk, 1, resident, true, true, true, 16);
        const int groups = gpu::heap_min_groups(b, m, topk, sms, 16);
        EXPECT_GE(groups, 16);
        EXPECT_LE(groups, std::max(16, topk));
        if (groups > 16)  // the partial lists' budget may hold the base below one block per SM already
          EXPECT_GE(gpu::plan_scan(m, n, 3, topk, 1, resident, true, true, true, groups).blocks_per_chunk(),
                    std::min(sms, b.blocks_per_chunk()))
              << m << " " << n << " " << topk;
      }
}

// The nearest neighbour's minimum: fewer groups a thread (down to 1) only where kMinGroupsNearest
// leaves SMs without a block, and then enough splits for every SM where the rows allow.
TEST(V15Plan, NearestNeighbourFillsEverySmBeforeScanningFewerRows) {
  const int sms = 132, resident = sms * 16;
  const auto base = [&](int m, int n, int groups = gpu::kMinGroupsNearest) {
    return gpu::plan_scan(m, n, 3, 1, gpu::kNearestQueriesPerThread, resident, false, true, true, groups);
  };
  EXPECT_EQ(base(1, 1 << 16).splits, 32);  // case 3: 16384 groups / (128 row threads x 4)
  EXPECT_EQ(gpu::nearest_min_groups(base(1, 1 << 16), sms, 4), 1);
  EXPECT_EQ(base(1, 1 << 16, 1).splits, 128);
  EXPECT_EQ(gpu::nearest_min_groups(base(1, 1 << 17), sms, 4), 1);   // 64 blocks at 4; 256 at 1 (32768 / (128 x 132) < 2)
  EXPECT_EQ(gpu::nearest_min_groups(base(1, 1 << 18), sms, 4), 3);   // 65536 groups / (128 x 132) = 3
  EXPECT_EQ(gpu::nearest_min_groups(base(1, 1 << 19), sms, 4), 4);   // 256 blocks at 4 already
  EXPECT_EQ(base(1024, 1024).blocks_per_chunk(), 128);                // case 5: 2 query groups (4 queries a thread) x 64 splits
  EXPECT_EQ(gpu::nearest_min_groups(base(1024, 1024), sms, 4), 3);   // 256 groups / (32 row threads x 66 splits a group)
  EXPECT_EQ(base(1024, 1024, 3).blocks_per_chunk(), 170);
  EXPECT_EQ(gpu::nearest_min_groups(base(4096, 1 << 20), sms, 4), 4);
  EXPECT_EQ(gpu::nearest_min_groups(base(1, 2), sms, 4), 1);         // one group: one block whatever the minimum
  for (int m : {1, 2, 7, 100, 1024})
    for (int n : {1, 1000, 65537, 1 << 18, 1 << 22}) {
      const gpu::ScanPlan b = base(m, n);
      const int groups = gpu::nearest_min_groups(b, sms, 4);
      EXPECT_GE(groups, 1);
      EXPECT_LE(groups, 4);
      if (b.blocks_per_chunk() >= sms) EXPECT_EQ(groups, 4) << m << " " << n;
      EXPECT_GE(base(m, n, groups).blocks_per_chunk(), b.blocks_per_chunk()) << m << " " << n;
    }
  // v15.host_keys: auto up to 4096 queries and 256 KiB of references (cases 0-2 and 5: yes; 3 and 4: no).
  const std::size_t small = 1024 * 3 * 4, case3 = 65536 * 3 * 4;
  EXPECT_TRUE(gpu::host_keys_taken(1, small, Mode::automatic));
  EXPECT_TRUE(gpu::host_keys_taken(gpu::kHostKeysMaxQueries, gpu::kHostKeysMaxReferenceBytes, Mode::automatic));
  EXPECT_FALSE(gpu::host_keys_taken(gpu::kHostKeysMaxQueries + 1, small, Mode::automatic));
  EXPECT_FALSE(gpu::host_keys_taken(1, case3, Mode::automatic));
  EXPECT_TRUE(gpu::host_keys_taken(1 << 20, case3, Mode::on));
  EXPECT_FALSE(gpu::host_keys_taken(1, small, Mode::off));
}

TEST(V15Plan, SplitsFollowTheDeviceAndTheQueries) {
  for (int m : {1, 2, 7, 100, 1024, 4099, 1 << 20})
    for (int q : {1, 2, 4})
      for (int topk : {1, 8, 32, 2048})
        for (long long resident : {1LL, 132LL * 16, 1000000LL}) {
          const gpu::ScanPlan p = gpu::plan_scan(m, 1 << 20, 3, topk, q, resident, false);
          const std::string where = fmt::format("m {} q {} topk {} resident {}", m, q, topk, resident);
          EXPECT_EQ(p.query_threads & (p.query_threads - 1), 0) << where;
          EXPECT_EQ(p.query_threads * p.ref_threads, gpu::kScanBlock) << where;
          EXPECT_GE((long long)p.query_groups * p.query_threads * q, m) << where;
          EXPECT_LT((long long)(p.query_groups - 1) * p.query_threads * q, m) << where;
          EXPECT_GE(p.splits, 1) << where;
          EXPECT_LE((long long)p.blocks_per_chunk(), resident + p.query_groups) << where;
          if (p.partials() > 1)
            EXPECT_LE((long long)m * p.partials() * topk, std::max(gpu::kPartialBudget, (long long)m * p.ref_threads * topk))
                << where;
        }
  // One query: every thread of a block along the rows, enough splits for the device.
  const gpu::ScanPlan one = gpu::plan_scan(1, 1 << 24, 3, 1, 4, 132 * 16, false);
  // No ramp below kRampMinQueries; the last chunk tapered: case 8's 8 × 24 MiB become 7 × 24, 12, 6, 3 and 3 MiB.
  // (2^21 rows a 24 MiB chunk: halves of 2^20, 2^19 and 2^18 rows, then the last 2^18.)
  EXPECT_EQ(one.chunk_rows, (std::vector<int>{0, 2097152, 4194304, 6291456, 8388608, 10485760, 12582912, 14680064,
                                              14680064 + 1048576, 14680064 + 1572864, 14680064 + 1835008, 1 << 24}));
  EXPECT_EQ(gpu::plan_scan(1, 1 << 24, 3, 1, 4, 132 * 16, false, true, false).chunk_rows, gpu::plan_chunks(1 << 24, 12, false, false));
  EXPECT_EQ(gpu::plan_scan(1, 1 << 24, 3, 2, 2, 132 * 16, false).chunk_rows, gpu::plan_chunks(1 << 24, 12, false, false));  // topk 2
  EXPECT_EQ(gpu::plan_scan(gpu::kRampMinQueries, 1 << 24, 3, 1, 4, 132 * 16, false, false).chunk_rows,
            gpu::plan_chunks(1 << 24, 12, false, false));  // from kRampMinQueries queries: no taper
  // Case 9's 8 × 128 MiB: at most kMaxTaperChunks cuts (64, 32, 16, 8, then the last 8 MiB).
  EXPECT_EQ(gpu::plan_scan(1, 1 << 24, 16, 1, 4, 132 * 16, false).chunks(), 8 + gpu::kMaxTaperChunks);
  // A last chunk under 2 × kLastChunkBytes stays whole (case 10's sizes: 3 chunks of 4 MiB); one chunk stays one.
  for (int n : {1 << 20, 100000}) {
    std::vector<int> rows = gpu::plan_chunks(n, 12, false, false);
    gpu::taper_last_chunk(rows, 12);
    EXPECT_EQ(rows, gpu::plan_chunks(n, 12, false, false)) << n;
  }
  EXPECT_EQ(one.query_threads, 1);
  EXPECT_EQ(one.ref_threads, gpu::kScanBlock);
  EXPECT_GE(one.blocks_per_chunk(), 132);
  EXPECT_LE(one.blocks_per_chunk(), 132 * 16);
  // Case 10's shape: 1024 queries, 4 per thread: two query groups, the rest splits of the rows.
  const gpu::ScanPlan ten = gpu::plan_scan(1024, 1 << 20, 3, 1, 4, 132 * 16, false);
  EXPECT_EQ(ten.query_threads, gpu::kScanBlock);
  EXPECT_EQ(ten.query_groups, 2);
  EXPECT_EQ(ten.splits, 132 * 8);
  EXPECT_EQ(ten.chunks(), 5);
  EXPECT_EQ(gpu::plan_scan(1024, 1 << 20, 3, 1, 4, 132 * 16, false, false).chunks(), 3);
  // A device twice the size gets twice the splits.
  EXPECT_EQ(gpu::plan_scan(1024, 1 << 20, 3, 1, 4, 264 * 16, false).splits, 264 * 8);
  // Many queries and topk 32: one chunk and one list per query (no merge).
  const gpu::ScanPlan many = gpu::plan_scan(1 << 20, 1 << 20, 5, 32, 1, 132 * 16, false);
  EXPECT_EQ(many.partials(), 1);
  // Over the budget with the ramp's chunks but not with the equal ones: the equal chunks.
  const gpu::ScanPlan some = gpu::plan_scan(100000, 1 << 24, 5, 32, 1, 132 * 16, false);
  EXPECT_EQ(some.chunk_rows, gpu::plan_chunks(1 << 24, 20, false, false));
  EXPECT_GT(100000LL * some.ref_threads * 32 * (long long)(gpu::plan_chunks(1 << 24, 20, false, true).size() - 1),
            gpu::kPartialBudget);  // the ramp's chunks were over it
  // The fp32 filter's several-chunk test shapes (8 queries per thread, test_v15's f32_cases) do
  // take several chunks, the first ones growing.
  for (const auto& [m, n, dim] : std::vector<std::tuple<int, int, int>>{{300, (1 << 20) + 3, 2}, {100, (1 << 19) + 1, 5},
                                                                       {257, 1 << 20, 3}}) {
    const gpu::ScanPlan f = gpu::plan_scan(m, n, dim, 1, 8, 132 * 3, false);
    EXPECT_GT(f.chunks(), 2) << m << " " << n << " " << dim;
    EXPECT_EQ(f.chunk_rows, gpu::plan_chunks(n, std::size_t(dim) * 4, false, true)) << m << " " << n << " " << dim;
  }
}

// What the harness tells versions about the values: whole or not, and the range of both sets.
TEST(V15Int8Plan, ExamineValuesFindsWholeNumbersAndTheirRange) {
  const std::vector<float> q = {3.f, -7.f, 250.f}, r = {0.f, 12.f};
  ValueTraits t = examine_values(q.data(), q.size(), r.data(), r.size());
  EXPECT_TRUE(t.known);
  EXPECT_TRUE(t.whole);
  EXPECT_EQ(t.lowest, -7.f);
  EXPECT_EQ(t.highest, 250.f);
  t = examine_values(nullptr, 0, r.data(), r.size());  // a self-join: the references alone
  EXPECT_TRUE(t.whole);
  EXPECT_EQ(t.lowest, 0.f);
  EXPECT_EQ(t.highest, 12.f);
  for (float bad : {0.5f, -1e-3f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> rr = r;
    rr.push_back(bad);
    t = examine_values(q.data(), q.size(), rr.data(), rr.size());
    EXPECT_TRUE(t.known);
    EXPECT_FALSE(t.whole) << bad;
  }
}

// The int8 path is taken only where it is exact (whole values in a span of 256, |value| ≤ 2^24,
// k ≤ 32768) and, in the automatic mode, only from k = 16 and m = 32; the reasons name the rule.
TEST(V15Int8Plan, TakenOnlyWhereExactAndWorthIt) {
  std::vector<float> points(64 * 100, 1.f);
  Problem p{64, 100, 100, 10, points.data(), points.data()};
  const auto plan = [&](gpu::Int8Mode mode) { return gpu::plan_int8(p, mode); };
  EXPECT_EQ(plan(gpu::Int8Mode::automatic).why, "values not examined");
  p.values = ValueTraits{true, true, 0.f, 255.f};
  gpu::Int8Plan a = plan(gpu::Int8Mode::automatic);
  EXPECT_TRUE(a.exact && a.chosen) << a.why;
  EXPECT_EQ(a.shift, 128.f);  // [0, 255] − 128 = [-128, 127]
  EXPECT_EQ(a.padded_dim, 64);
  EXPECT_EQ(a.padded_n, 100);
  EXPECT_EQ(a.query_chunk, 100);
  EXPECT_FALSE(plan(gpu::Int8Mode::off).chosen);
  p.values = ValueTraits{true, true, -300.f, -45.f};  // a span of 256 anywhere
  a = plan(gpu::Int8Mode::automatic);
  EXPECT_TRUE(a.chosen) << a.why;
  EXPECT_EQ(a.shift, -172.f);
  p.values = ValueTraits{true, true, -300.f, -44.f};
  EXPECT_NE(plan(gpu::Int8Mode::on).why.find("more than 256 integers"), std::string::npos);
  p.values = ValueTraits{true, false, 0.f, 0.f};
  EXPECT_EQ(plan(gpu::Int8Mode::on).why, "not every value is a whole number");
  p.values = ValueTraits{true, true, 16777216.f, 16777218.f};
  EXPECT_NE(plan(gpu::Int8Mode::on).why.find("beyond 2^24"), std::string::npos);
  p.values = ValueTraits{true, true, 0.f, 255.f};
  p.dim = gpu::kInt8MaxDim + 1;
  EXPECT_NE(plan(gpu::Int8Mode::on).why.find("overflow"), std::string::npos);
  // Small shapes: the automatic rule leaves them to the scan, "on" takes them; k padded to 16,
  // n to 4.
  p.dim = gpu::kInt8MinDim - 1;
  EXPECT_FALSE(plan(gpu::Int8Mode::automatic).chosen);
  EXPECT_TRUE(plan(gpu::Int8Mode::automatic).exact);
  p.dim = 33, p.m = 31, p.n = 5;
  EXPECT_FALSE(plan(gpu::Int8Mode::automatic).chosen);
  a = plan(gpu::Int8Mode::on);
  EXPECT_TRUE(a.chosen);
  EXPECT_EQ(a.padded_dim, 48);
  EXPECT_EQ(a.padded_n, 8);
  // Rounds of dot products stay under kInt8DotBytes: 2^20 references in one chunk leave 256 queries a round.
  p.m = 10000, p.n = 1 << 20;
  a = gpu::plan_int8(p, gpu::Int8Mode::automatic, 1);
  EXPECT_EQ(a.query_chunk, 256);
  EXPECT_LE(std::size_t(a.query_chunk) * a.padded_n * 4, gpu::kInt8DotBytes);
  EXPECT_GT(gpu::int8_device_bytes(p, a), std::size_t(a.query_chunk) * a.padded_n * 4);
}

// Reference chunks (v15.int8_chunks): the boundaries cover rows 0..n once, in order, every one but n a
// multiple of kInt8ChunkAlign (so only the last chunk is padded for the GEMM), no chunk empty, no
// more chunks than asked, and exactly as many where n has room for them.
TEST(V15Int8Plan, ChunksCoverTheRowsOnceOnAlignedBoundaries) {
  for (int n : {1, 4, 5, 63, 64, 65, 130, 300, 3001, 4097, 60000, 1 << 20})
    for (int chunks : {1, 2, 3, 7, 11, 16, 32}) {
      const std::vector<int> b = gpu::int8_chunk_rows(n, chunks);
      const std::string where = fmt::format("n = {}, {} chunks", n, chunks);
      ASSERT_GE(b.size(), 2u) << where;
      EXPECT_EQ(b.front(), 0) << where;
      EXPECT_EQ(b.back(), n) << where;
      EXPECT_LE(int(b.size()) - 1, chunks) << where;
      for (std::size_t i = 1; i < b.size(); ++i) {
        EXPECT_GT(b[i], b[i - 1]) << where << " boundary " << i;
        if (i + 1 < b.size()) {
          EXPECT_EQ(b[i] % gpu::kInt8ChunkAlign, 0) << where << " boundary " << i;
          EXPECT_EQ(b[i] - b[i - 1], b[1] - b[0]) << where << ": chunks but the last are equal";
        }
      }
      if (n >= chunks * chunks * gpu::kInt8ChunkAlign) EXPECT_EQ(int(b.size()) - 1, chunks) << where;
    }
  EXPECT_EQ(gpu::int8_chunk_rows(4097, 7), (std::vector<int>{0, 640, 1280, 1920, 2560, 3200, 3840, 4097}));
  EXPECT_EQ(gpu::int8_chunk_rows(130, 7), (std::vector<int>{0, 64, 128, 130}));
  EXPECT_EQ(gpu::int8_chunk_rows(5, 7), (std::vector<int>{0, 5}));
}

// The rule (auto): sqrt(reference bytes / kInt8ChunkCostBytes) chunks, at most kInt8MaxChunks, one
// for self-joins; "1" is the unpipelined path. Fashion-MNIST (k = 784, n = 60 000: 179.4 MiB) takes
// 8 chunks of 7552 rows, all 10 000 queries in one round of each.
TEST(V15Int8Plan, ChunkRuleAndTheMemoryItNeeds) {
  Problem p{784, 10000, 60000, 100, nullptr, nullptr};
  p.values = ValueTraits{true, true, 0.f, 255.f};
  const gpu::Int8Plan a = gpu::plan_int8(p, gpu::Int8Mode::automatic);
  ASSERT_TRUE(a.chosen) << a.why;
  EXPECT_EQ(a.chunks(), 8);  // sqrt(188 MB / 3.28 MB) = 7.6
  EXPECT_TRUE(a.pipelined());
  EXPECT_EQ(a.chunk_rows[1], 7552);  // 60000 / 8 = 7500, up to a multiple of 64
  EXPECT_EQ(a.chunk_stride, 7552);
  EXPECT_EQ(a.query_chunk, 10000);
  EXPECT_NE(a.chunks_why.find("int8_chunks=auto"), std::string::npos) << a.chunks_why;
  // Two rounds of dot products (under the cap together) and the carried keys, besides the serial path's buffers.
  EXPECT_LE(2 * std::size_t(a.query_chunk) * a.chunk_stride * 4, gpu::kInt8DotBytes);
  const gpu::Int8Plan one = gpu::plan_int8(p, gpu::Int8Mode::automatic, 1);
  EXPECT_EQ(one.chunks(), 1);
  EXPECT_FALSE(one.pipelined());
  EXPECT_EQ(one.chunk_stride, one.padded_n);
  EXPECT_EQ(one.chunks_why, "int8_chunks=1");
  const std::size_t inputs = (std::size_t(p.m) + p.n) * p.dim * 4 + (std::size_t(p.m) + a.padded_n) * a.padded_dim;
  const std::size_t answers = std::size_t(p.m) * p.topk * 8;
  EXPECT_GE(gpu::int8_device_bytes(p, a), inputs + answers + 2 * std::size_t(a.query_chunk) * a.chunk_stride * 4 + answers);
  EXPECT_GE(gpu::int8_device_bytes(p, one), inputs + answers + std::size_t(one.query_chunk) * one.padded_n * 4);
  EXPECT_EQ(gpu::plan_int8(p, gpu::Int8Mode::automatic, 7).chunks(), 7);
  // v15.int8_ramp: the first of several chunks halved (7552 rows: 3776 and 3776), one chunk more; one chunk stays one.
  const gpu::Int8Plan ramp = gpu::plan_int8(p, gpu::Int8Mode::automatic, gpu::kInt8ChunksAuto, true);
  EXPECT_EQ(ramp.chunks(), 9);
  EXPECT_EQ(ramp.chunk_rows[1], 3776);
  EXPECT_EQ(ramp.chunk_rows[2], 7552);
  EXPECT_EQ(ramp.chunk_stride, a.chunk_stride);
  EXPECT_NE(ramp.chunks_why.find("the first halved"), std::string::npos) << ramp.chunks_why;
  EXPECT_EQ(gpu::plan_int8(p, gpu::Int8Mode::automatic, 1, true).chunks(), 1);
  EXPECT_EQ(gpu::int8_halve_first({0, 64, 100}), (std::vector<int>{0, 64, 100}));  // 32 rows: below the alignment
  EXPECT_EQ(gpu::int8_halve_first({0, 192, 300}), (std::vector<int>{0, 64, 192, 300}));
  EXPECT_EQ(gpu::int8_halve_first({0, 300}), (std::vector<int>{0, 300}));
  // Self-joins: one chunk whatever is asked.
  p.self_join = true, p.m = p.n;
  const gpu::Int8Plan self = gpu::plan_int8(p, gpu::Int8Mode::automatic, 7);
  EXPECT_EQ(self.chunks(), 1);
  EXPECT_NE(self.chunks_why.find("self-join"), std::string::npos) << self.chunks_why;
  p.self_join = false, p.m = 10000;
  // The rule: 2 MiB of references stay in one chunk (sqrt 0.64), 20 MiB make 3 (sqrt 6.4), 256 MiB 9
  // (sqrt 81.8), 1 GiB the cap of 16 (sqrt 327).
  p.dim = 128, p.n = 4096;  // 2 MiB
  EXPECT_EQ(gpu::plan_int8(p, gpu::Int8Mode::automatic).chunks(), 1);
  p.n = 40960;  // 20 MiB
  EXPECT_EQ(gpu::plan_int8(p, gpu::Int8Mode::automatic).chunks(), 3);
  p.dim = 64, p.n = 1 << 20;  // 256 MiB
  EXPECT_EQ(gpu::plan_int8(p, gpu::Int8Mode::automatic).chunks(), 9);
  p.dim = 256;  // 1 GiB
  EXPECT_EQ(gpu::plan_int8(p, gpu::Int8Mode::automatic).chunks(), gpu::kInt8MaxChunks);
}

// The engine's settings come from the declared parameters (kernels/bruteforce/engine.hpp): the defaults
// are the rules', each value given lands in its field, and values outside a declaration are refused.
TEST(V15EngineSettings, ComeFromTheParameters) {
  const std::vector<ParamDecl> decls = gpu::engine_params();
  const gpu::EngineSettings d = gpu::settings_from(ParamValues("v15", decls, {}));
  EXPECT_EQ(d.int8, Mode::automatic);
  EXPECT_EQ(d.tc, Mode::automatic);
  EXPECT_EQ(d.collect_balance, Mode::automatic);
  EXPECT_EQ(d.fp32_queries, gpu::kFp32Queries);
  EXPECT_EQ(d.collect_queries, 0);
  EXPECT_EQ(d.min_groups, 0);
  EXPECT_TRUE(d.ramp && d.taper && d.merge_runs && d.shared_lists);
  EXPECT_FALSE(d.one_stream);
  EXPECT_EQ(d.host_keys, Mode::automatic);
  EXPECT_EQ(gpu::settings_from(ParamValues("v15", decls, {{"host_keys", "off"}})).host_keys, Mode::off);
  EXPECT_EQ(d.int8_chunks, 0);  // auto
  EXPECT_EQ(gpu::settings_from(ParamValues("v15", decls, {{"int8_chunks", "7"}})).int8_chunks, 7);
  EXPECT_EQ(gpu::settings_from(ParamValues("v15", decls, {{"int8_chunks", "1"}})).int8_chunks, 1);
  EXPECT_TRUE(d.int8_ramp);
  EXPECT_FALSE(gpu::settings_from(ParamValues("v15", decls, {{"int8_ramp", "off"}})).int8_ramp);
  EXPECT_TRUE(gpu::settings_from(ParamValues("v15", decls, {{"one_stream", "on"}})).one_stream);
  const gpu::EngineSettings s = gpu::settings_from(ParamValues(
      "v15", decls,
      {{"int8", "off"}, {"tc", "on"}, {"tc_split", "off"}, {"shared_lists", "off"}, {"fp32_filter", "on"}, {"fp32_queries", "4"},
       {"fp32_stage", "off"}, {"seed", "on"}, {"collect", "off"}, {"collect_queries", "2"}, {"collect_scores", "off"},
       {"collect_tc", "on"}, {"collect_balance", "on"}, {"ramp", "off"}, {"taper", "off"}, {"min_groups", "64"},
       {"merge_runs", "off"}}));
  EXPECT_EQ(s.int8, Mode::off);
  EXPECT_EQ(s.tc, Mode::on);
  EXPECT_EQ(s.tc_split, Mode::off);
  EXPECT_FALSE(s.shared_lists);
  EXPECT_EQ(s.fp32_filter, Mode::on);
  EXPECT_EQ(s.fp32_queries, 4);
  EXPECT_EQ(s.fp32_stage, Mode::off);
  EXPECT_EQ(s.seed, Mode::on);
  EXPECT_EQ(s.collect, Mode::off);
  EXPECT_EQ(s.collect_queries, 2);
  EXPECT_EQ(s.collect_scores, Mode::off);
  EXPECT_EQ(s.collect_tc, Mode::on);
  EXPECT_EQ(s.collect_balance, Mode::on);
  EXPECT_FALSE(s.ramp || s.taper || s.merge_runs);
  EXPECT_EQ(s.min_groups, 64);
  for (const auto& [name, bad] : std::vector<std::pair<const char*, const char*>>{
           {"int8", "yes"}, {"fp32_queries", "6"}, {"fp32_queries", "16"}, {"fp32_stage", "1"}, {"collect_queries", "3"},
           {"collect_queries", "0"}, {"int8_chunks", "0"}, {"int8_chunks", "9"}, {"min_groups", "x"}, {"min_groups", "1048577"}, {"shared_lists", "1"}})
    EXPECT_THROW(ParamValues("v15", decls, {{name, bad}}), ParamError) << name << "=" << bad;
}

// The tensor-core filter's rule: topk ≤ 32, k ≤ 32, finite examined values, TF32 hardware, and in the
// automatic mode at least one block of queries; the reasons name the rule.
TEST(V15TcPlan, TakenOnlyWhereItApplies) {
  std::vector<float> points(3 * 1000, 0.5f);
  Problem p{3, 1000, 1000, 1, points.data(), points.data()};
  const long long resident = 132 * 4;
  const auto plan = [&](gpu::TcMode mode, int cc = 9) { return gpu::plan_tc(p, mode, cc, resident, false); };
  EXPECT_EQ(plan(gpu::TcMode::automatic).why, "values not examined");
  p.values = ValueTraits{true, false, -1.f, 3.f, true};
  // k = 3 and n = 1000: the automatic rule keeps the scan; "on" takes the filter.
  EXPECT_NE(plan(gpu::TcMode::automatic).why.find("pays from k ≥ 8, m ≥ 64 and n ≥ 262144"), std::string::npos);
  gpu::TcPlan a = plan(gpu::TcMode::on);
  ASSERT_TRUE(a.chosen) << a.why;
  EXPECT_EQ(a.center, 1.f);
  EXPECT_GE(a.half_span, 2.f);
  EXPECT_LE(a.half_span, 2.f * (1 + 1e-5f));
  EXPECT_EQ(a.slices, 1);
  EXPECT_TRUE(a.split);
  EXPECT_GE(double(a.band), gpu::tc_score_error_bound(3, 2.0, true));
  EXPECT_EQ(a.query_groups, 4);  // ceil(1000 / 256)
  EXPECT_EQ(plan(gpu::TcMode::off).why, "tc=off");
  EXPECT_NE(plan(gpu::TcMode::on, 7).why.find("no TF32 tensor cores"), std::string::npos);
  // topk 2..32: lists of keys, taken when asked for; the automatic rule has its own bounds.
  p.topk = 2;
  EXPECT_NE(plan(gpu::TcMode::automatic).why.find("pays for topk > 1 from k ≥ 3, m ≥ 1024 and n ≥ 262144"),
            std::string::npos);
  EXPECT_TRUE(plan(gpu::TcMode::on).chosen);
  p.topk = gpu::kFilterMaxTopk;
  EXPECT_TRUE(plan(gpu::TcMode::on).chosen);
  p.topk = gpu::kFilterMaxTopk + 1;
  EXPECT_NE(plan(gpu::TcMode::on).why.find("topk 33 > 32"), std::string::npos);
  {
    const Problem keep = p;
    p.topk = 5, p.m = 1024, p.n = 1 << 18;
    EXPECT_TRUE(plan(gpu::TcMode::automatic).chosen);  // k = 3: split values
    EXPECT_TRUE(plan(gpu::TcMode::automatic).split);
    p.dim = 2;
    EXPECT_FALSE(plan(gpu::TcMode::automatic).chosen);
    p = keep;
  }
  p.topk = 1, p.dim = 33;
  EXPECT_NE(plan(gpu::TcMode::on).why.find("k = 33 > 32"), std::string::npos);
  p.dim = 32;
  EXPECT_EQ(plan(gpu::TcMode::on).slices, 4);
  p.dim = 3;
  p.values.finite = false;
  EXPECT_EQ(plan(gpu::TcMode::on).why, "not every value is finite");
  p.values = ValueTraits{true, false, -3e18f, 3e18f, true};
  EXPECT_NE(plan(gpu::TcMode::on).why.find("could overflow"), std::string::npos);
  p.values = ValueTraits{true, false, 0.f, 1.f, true};
  p.m = gpu::kTcMinQueries - 1;
  EXPECT_NE(plan(gpu::TcMode::automatic).why.find("pays from k"), std::string::npos);
  a = plan(gpu::TcMode::on);
  EXPECT_TRUE(a.chosen);
  EXPECT_EQ(a.query_groups, 1);
  // Case 11's shape (k 16, 1024 queries, 2^20 rows): taken; 4 query groups, splits that fill the
  // device, the chunks of the scan; the values not split. Case 10's (k = 3) keeps the scan.
  p.dim = 16, p.m = 1024, p.n = 1 << 20;
  a = plan(gpu::TcMode::automatic);
  ASSERT_TRUE(a.chosen) << a.why;
  EXPECT_FALSE(a.split);
  EXPECT_EQ(a.slices, 2);
  EXPECT_EQ(a.query_groups, 4);
  EXPECT_EQ(a.splits, int((resident + 3) / 4));
  EXPECT_EQ(a.chunk_rows, gpu::plan_chunks(p.n, 64, false, false));  // equal chunks: no ramp
  EXPECT_EQ(gpu::plan_tc(p, gpu::TcMode::automatic, 9, resident, true).chunks(), 1);
  p.n = gpu::kTcMinRows - 1;
  EXPECT_FALSE(plan(gpu::TcMode::automatic).chosen);
  p.dim = 3, p.n = 1 << 20;
  EXPECT_FALSE(plan(gpu::TcMode::automatic).chosen);
  // Few rows: every block still stages kTcMinStagesPerBlock tiles of rows, or there is one split.
  p.n = 100;
  EXPECT_EQ(plan(gpu::TcMode::on).splits, 1);
}

// The bound grows with k and with the square of the spread, and TF32's rounding of both factors
// (2^-11 each, on 2|q - c||r - c| per dimension) is its main part.
TEST(V15TcPlan, ErrorBoundCoversTf32Rounding) {
  for (int dim : {1, 3, 8, 16, 32})
    for (double h : {1e-3, 0.5, 1.0, 6400.0}) {
      const double e = gpu::tc_score_error_bound(dim, h);
      const double w = dim * h * h;
      EXPECT_GE(e, 2 * std::ldexp(1.0, -10) * w) << dim << " " << h;
      EXPECT_LE(e, 1.2 * std::ldexp(1.0, -9) * w + 1e-29) << dim << " " << h;
      EXPECT_NEAR(gpu::tc_score_error_bound(dim, 2 * h) / e, 4.0, 1e-9) << dim << " " << h;
    }
  EXPECT_GT(gpu::tc_score_error_bound(16, 1.0), gpu::tc_score_error_bound(3, 1.0));
  // Split values: hi·lo and lo·hi terms leave lo·lo (2^-22) and the sums; far below one TF32.
  for (int dim : {1, 3, 8}) {
    const double split = gpu::tc_score_error_bound(dim, 1.0, true), single = gpu::tc_score_error_bound(dim, 1.0);
    EXPECT_GE(split, 7 * std::ldexp(1.0, -22) * dim) << dim;
    EXPECT_LT(split * 20, single) << dim;
  }
  EXPECT_TRUE(gpu::tc_split(7));
  EXPECT_FALSE(gpu::tc_split(8));
  EXPECT_FALSE(gpu::tc_split(7, Mode::off));
  EXPECT_TRUE(gpu::tc_split(8, Mode::on));
  EXPECT_FALSE(gpu::tc_split(9, Mode::on));  // split values need one slice
}

// The tile filter's rule: v15.tc and v15.tc_tile, topk <= 16, k <= 16, examined finite values,
// compute capability 8, the automatic shapes; the scale puts H·s in [1/2, 1); the band is the bound's.
TEST(V15TilePlan, TakenOnlyWhereItApplies) {
  std::vector<float> points(12 * 1000, 0.5f);
  Problem p{12, 1 << 19, 1 << 17, 5, points.data(), points.data()};
  const auto plan = [&](Mode tile, Mode tc = Mode::automatic, int cc = 9) { return gpu::plan_tile(p, tc, tile, cc); };
  EXPECT_EQ(plan(Mode::automatic).why, "values not examined");
  p.values = ValueTraits{true, false, -1.f, 3.f, true};
  gpu::TilePlan a = plan(Mode::automatic);
  ASSERT_TRUE(a.chosen) << a.why;
  EXPECT_EQ(a.center, 1.f);
  EXPECT_GE(a.half_span, 2.f);
  EXPECT_EQ(a.scale, 0.25f);  // H just above 2: H·s just above 1/2
  EXPECT_GE(double(a.band), gpu::tile_score_error_bound(12, double(a.half_span) * a.scale));
  EXPECT_EQ(a.blocks, (1 << 19) / gpu::kTileBlockQueries);
  EXPECT_EQ(a.chunk_rows, gpu::plan_chunks(p.n, 48, false, false));
  EXPECT_EQ(plan(Mode::off).why, "tc_tile=off");
  EXPECT_EQ(plan(Mode::on, Mode::off).why, "tc=off");
  EXPECT_NE(plan(Mode::automatic, Mode::on).why.find("tc=on asks for the TF32 tensor-core filter"), std::string::npos);
  EXPECT_TRUE(plan(Mode::on, Mode::on).chosen);
  EXPECT_NE(plan(Mode::on, Mode::automatic, 7).why.find("compute capability 7.x"), std::string::npos);
  p.m = gpu::kTileMinQueries;  // from 1024 queries and 2^17 rows (2^16 at topk 1)
  EXPECT_TRUE(plan(Mode::automatic).chosen);
  p.m = gpu::kTileMinQueries - 1;
  EXPECT_EQ(plan(Mode::automatic).why, "the tile filter pays from k ≥ 5, m ≥ 1024 and n ≥ 131072 (65536 at topk 1)");
  EXPECT_TRUE(plan(Mode::on).chosen);
  p.m = gpu::kTileMinQueries, p.n = gpu::kTileMinRows - 1;
  EXPECT_FALSE(plan(Mode::automatic).chosen);
  p.n = gpu::kTileNearestMinRows, p.topk = 1;
  EXPECT_TRUE(plan(Mode::automatic).chosen);
  p.n = gpu::kTileNearestMinRows - 1;
  EXPECT_FALSE(plan(Mode::automatic).chosen);
  p.m = gpu::kTileMinQueries - 1, p.n = 1 << 17;
  EXPECT_FALSE(plan(Mode::automatic).chosen);
  p.m = 1 << 19, p.topk = 5, p.dim = gpu::kTileMinDim - 1;
  EXPECT_FALSE(plan(Mode::automatic).chosen);
  EXPECT_TRUE(plan(Mode::on).chosen);
  p.dim = 17;
  EXPECT_NE(plan(Mode::on).why.find("k = 17 > 16"), std::string::npos);
  p.dim = 16, p.topk = 17;
  EXPECT_NE(plan(Mode::on).why.find("topk 17 > 16"), std::string::npos);
  p.topk = 5, p.self_join = true, p.m = p.n;
  EXPECT_EQ(plan(Mode::on).chunks(), 1);
  p.values = ValueTraits{true, false, 2.f, 2.f, true};  // one value: H = 0, s = 1
  a = plan(Mode::on);
  ASSERT_TRUE(a.chosen) << a.why;
  EXPECT_EQ(a.scale, 1.f);
  p.values = ValueTraits{true, false, 0.f, 1e-30f, true};
  EXPECT_NE(plan(Mode::on).why.find("scale"), std::string::npos);
  p.values.finite = false;
  EXPECT_EQ(plan(Mode::on).why, "not every value is finite");
}

// The query grid's rule (v15.grid): no self-join, examined finite values, k <= 3, topk <= 32, m <= 2048;
// auto adds topk 1, k <= 2, m >= 1024, n >= 2^20. Cells: the largest side whose power k is at most m / 2 and 512.
// Chunks: 256 KiB first (one chunk up to 512 KiB), doubling to 4 MiB, 4 MiB ones, then the last halved down to at most 2 MiB, every
// row once, in order.
TEST(V15GridPlan, TakenOnlyWhereItAppliesWithItsCellsAndChunks) {
  std::vector<float> points(3 * 1000, 0.5f);
  Problem p{3, 1024, 1 << 20, 1, points.data(), points.data()};
  EXPECT_EQ(gpu::plan_grid(p, Mode::automatic).why, "values not examined, or not all finite");
  p.values = ValueTraits{true, false, 0.f, 1.f, true};
  EXPECT_EQ(gpu::plan_grid(p, Mode::automatic).why, "auto: k = 3 over 2 (slower at k 3 on an H100)");
  for (int dim : {1, 2}) {
    p.dim = dim;
    EXPECT_TRUE(gpu::plan_grid(p, Mode::automatic).chosen) << dim;
  }
  p.dim = 3;
  gpu::GridPlan g = gpu::plan_grid(p, Mode::on);
  ASSERT_TRUE(g.chosen) << g.why;
  EXPECT_EQ(g.side, 8);  // 8^3 = 512 = 1024 / 2
  EXPECT_EQ(g.cells, 512);
  // case 10's 12 MiB: 0.25, 0.5, 1, 2 and 4 MiB, then the 4.25 MiB left halved twice
  const std::vector<double> mib = {0.25, 0.5, 1, 2, 4, 2.125, 1.0625, 1.0625};
  ASSERT_EQ(g.chunks(), int(mib.size()));
  for (int c = 0; c < g.chunks(); ++c)
    EXPECT_NEAR(double(g.chunk_rows[c + 1] - g.chunk_rows[c]) * 12 / (1 << 20), mib[c], 2e-4) << c;
  for (int n : {1, 2, 5, 21845, 21846, 65537, 1 << 18, 5000011})
    for (std::size_t row_bytes : {4, 8, 12}) {
      const std::vector<int> rows = gpu::grid_chunks(n, row_bytes);
      ASSERT_GE(rows.size(), 2u);
      EXPECT_EQ(rows.front(), 0);
      EXPECT_EQ(rows.back(), n);
      for (std::size_t c = 0; c + 1 < rows.size(); ++c) {
        EXPECT_LT(rows[c], rows[c + 1]) << n;
        EXPECT_LE(std::size_t(rows[c + 1] - rows[c]) * row_bytes, gpu::kGridChunkBytes + gpu::kGridChunkBytes / 8 + row_bytes) << n;
      }
      if (std::size_t(n) * row_bytes <= 2 * gpu::kGridFirstChunkBytes) {
        EXPECT_EQ(rows.size(), 2u) << n;
      } else {
        EXPECT_LE(std::size_t(rows[1]) * row_bytes, gpu::kGridFirstChunkBytes) << n;
        EXPECT_LE(std::size_t(rows.back() - rows[rows.size() - 2]) * row_bytes, 2 * gpu::kGridLastChunkBytes) << n;
      }
    }
  EXPECT_EQ(gpu::grid_side(1, 3), 1);
  EXPECT_EQ(gpu::grid_side(15, 3), 1);
  EXPECT_EQ(gpu::grid_side(16, 3), 2);
  EXPECT_EQ(gpu::grid_side(2048, 3), 8);  // capped at 512 cells
  EXPECT_EQ(gpu::grid_side(2048, 2), 22);
  EXPECT_EQ(gpu::grid_side(2048, 1), 512);
  EXPECT_EQ(gpu::grid_side(300, 2), 12);
  EXPECT_EQ(gpu::plan_grid(p, Mode::off).why, "grid=off");
  p.dim = 2, p.m = gpu::kGridMinQueries - 1;
  EXPECT_EQ(gpu::plan_grid(p, Mode::automatic).why, "auto: m = 1023 under 1024");
  EXPECT_TRUE(gpu::plan_grid(p, Mode::on).chosen);
  p.m = 1024, p.n = gpu::kGridMinRows - 1;
  EXPECT_EQ(gpu::plan_grid(p, Mode::automatic).why, "auto: n = 1048575 under 2^20");
  EXPECT_TRUE(gpu::plan_grid(p, Mode::on).chosen);
  p.n = 1 << 20, p.topk = 2;
  EXPECT_EQ(gpu::plan_grid(p, Mode::automatic).why, "auto: topk 1 only");
  EXPECT_TRUE(gpu::plan_grid(p, Mode::on).chosen);
  p.topk = 33;
  EXPECT_EQ(gpu::plan_grid(p, Mode::on).why, "topk 33 over 32");
  p.topk = 1, p.m = 2049;
  EXPECT_EQ(gpu::plan_grid(p, Mode::on).why, "m = 2049 over 2048");
  p.m = 1024, p.n = gpu::kGridMaxRows + 1;
  EXPECT_EQ(gpu::plan_grid(p, Mode::on).why, "n = 2147418112 over 2^31 - 2^16 (the kernels' int rows)");
  p.n = 1 << 20;
  p.m = 1024, p.dim = 4;
  EXPECT_EQ(gpu::plan_grid(p, Mode::on).why, "k = 4 over 3");
  p.dim = 3, p.self_join = true;
  EXPECT_EQ(gpu::plan_grid(p, Mode::on).why, "a self-join");
  p.self_join = false, p.values.finite = false;
  EXPECT_FALSE(gpu::plan_grid(p, Mode::on).chosen);
}

// The scan's path line says why the query grid was not taken: case 10's shape under auto (k 3), and
// no reason where none is given.
TEST(V15GridPlan, TheScanPathSaysWhyTheGridWasNotTaken) {
  std::vector<float> points(3 * 1000, 0.5f);
  Problem p{3, 1024, 1 << 20, 1, points.data(), points.data()};
  p.values = ValueTraits{true, false, 0.f, 1.f, true};
  gpu::ScanPathFacts f;
  f.dim = 3, f.compiled = true, f.list = "one", f.known = true, f.filters_apply = true;
  f.plan = gpu::plan_scan(p.m, p.n, p.dim, p.topk, 1, 132 * 8, false);
  f.grid_why = gpu::plan_grid(p, Mode::automatic).why;
  const std::string text = gpu::scan_path_text(f);
  EXPECT_NE(text.find("; query grid not taken: auto: k = 3 over 2 (slower at k 3 on an H100)"), std::string::npos) << text;
  f.grid_why.clear();
  EXPECT_EQ(gpu::scan_path_text(f).find("query grid"), std::string::npos);
}

// fp16 rounding to nearest (11 significant bits; below 2^-14 a fixed spacing of 2^-24), as
// __floats2half2_rn rounds; |x| stays far below fp16's largest value here.
double to_fp16(double x) {
  const double ax = std::fabs(x);
  if (ax == 0) return x;
  const double ulp = ax < std::ldexp(1.0, -14) ? std::ldexp(1.0, -24) : std::ldexp(1.0, std::ilogb(ax) - 10);
  return std::nearbyint(x / ulp) * ulp;
}

// Row splits by the rule (fill the device once, no split under kTileMinSplitStages stages) or the knob
// (at most one per stage), at any topk; the ramp only with fewer blocks of queries than the device holds.
TEST(V15TilePlan, RowSplits) {
  const long long resident = 132LL * gpu::kTileFoldBlocksPerSm;
  EXPECT_EQ(gpu::tile_splits(2, 1 << 20, resident, 0), 396);         // 8192 stages: the device's 792 blocks
  EXPECT_EQ(gpu::tile_splits(2, 128 * 40, resident, 0), 10);        // 40 stages, 4 a split
  EXPECT_EQ(gpu::tile_splits(2, 128 * 7, resident, 0), 1);          // under 8 stages: one
  EXPECT_EQ(gpu::tile_splits(1, 128 * 3 + 1, resident, 0), 1);
  EXPECT_EQ(gpu::tile_splits(2000, 1 << 20, resident, 0), 1);       // the queries fill the device
  EXPECT_EQ(gpu::tile_splits(2, 1 << 20, 0, 0), 1);                 // no device: one
  EXPECT_EQ(gpu::tile_splits(2, 128 * 5, resident, 7), 5);          // the knob, at most one a stage
  EXPECT_EQ(gpu::tile_splits(2, 1 << 20, resident, 7), 7);
  EXPECT_EQ(gpu::tile_splits(1, 1 << 30, resident, 1 << 20), gpu::kTileMaxSplits);
  std::vector<float> points(3 * 1000, 0.5f);
  Problem p{3, 1024, 1 << 20, 1, points.data(), points.data()};
  p.values = ValueTraits{true, false, 0.f, 1.f, true};
  const auto plan = [&](int sms, int splits, bool ramp) { return gpu::plan_tile(p, Mode::automatic, Mode::on, 9, sms, splits, ramp); };
  for (int topk : {1, 5}) {
    p.topk = topk;
    gpu::TilePlan a = plan(132, 0, true);
    ASSERT_TRUE(a.chosen) << a.why;
    EXPECT_EQ(a.chunk_rows, gpu::plan_chunks(p.n, 12, false, true));
    EXPECT_TRUE(a.ramp);
    EXPECT_GT(a.chunks(), 3);
    ASSERT_EQ(int(a.chunk_splits.size()), a.chunks());
    for (int c = 0; c < a.chunks(); ++c)
      EXPECT_EQ(a.chunk_splits[c], gpu::tile_splits(2, a.chunk_rows[c + 1] - a.chunk_rows[c], resident, 0)) << c;
    EXPECT_EQ(*std::max_element(a.chunk_splits.begin(), a.chunk_splits.end()), 396);
    EXPECT_LT(a.chunk_splits[0], 396);  // the ramp's first chunk of 512 KiB: 342 stages, 4 a split
    EXPECT_NE(gpu::tile_path_text(p, a, 0, 64, 256).find("2 blocks x 85..396 splits of each chunk's rows (keys merged in global memory)"),
              std::string::npos)
        << gpu::tile_path_text(p, a, 0, 64, 256);
    a = plan(132, 0, false);
    EXPECT_EQ(a.chunk_rows, gpu::plan_chunks(p.n, 12, false, false));
    EXPECT_FALSE(a.ramp);
    a = plan(132, 7, false);
    for (int splits : a.chunk_splits) EXPECT_EQ(splits, 7);
    EXPECT_NE(gpu::tile_path_text(p, a, 2048, 64, 256).find("2 blocks x 7 splits of each chunk's rows (keys merged in global memory) of 128 threads"),
              std::string::npos);
    a = plan(132, 1, false);
    EXPECT_EQ(gpu::tile_path_text(p, a, 0, 64, 256).find("splits"), std::string::npos);
    a = plan(0, 0, true);  // no device: one split, equal chunks
    EXPECT_EQ(a.chunk_rows, gpu::plan_chunks(p.n, 12, false, false));
    for (int splits : a.chunk_splits) EXPECT_EQ(splits, 1);
  }
  p.topk = 1, p.m = 792 * gpu::kTileBlockQueries;  // the queries alone fill 132 SMs
  gpu::TilePlan a = plan(132, 0, true);
  EXPECT_EQ(a.chunk_rows, gpu::plan_chunks(p.n, 12, false, false));
  for (int splits : a.chunk_splits) EXPECT_EQ(splits, 1);
  EXPECT_EQ(a.waves, 1);
  // v15.tile_waves: the rule fills the device twice over from 32 blocks of queries while they alone leave SMs
  // idle (16384 queries: ceil(2 x 792 / 32) = 50 splits of the equal chunks), once below (4096: 99) and
  // from there; a set value as set; the knob's splits as set, whatever the waves.
  const auto waved = [&](int m, int waves, int splits = 0) {
    p.m = m;
    return gpu::plan_tile(p, Mode::automatic, Mode::on, 9, 132, splits, true, waves);
  };
  a = waved(16384, 0);
  EXPECT_EQ(a.blocks, gpu::kTileTwoWaveBlocks);
  EXPECT_EQ(a.waves, 2);
  EXPECT_EQ(*std::max_element(a.chunk_splits.begin(), a.chunk_splits.end()), 50);
  for (int c = 0; c < a.chunks(); ++c)
    EXPECT_EQ(a.chunk_splits[c], gpu::tile_splits(32, a.chunk_rows[c + 1] - a.chunk_rows[c], 2 * resident, 0)) << c;
  EXPECT_NE(gpu::tile_path_text(p, a, 0, 64, 256).find("splits of each chunk's rows (keys merged in global memory), 2 times the blocks the device holds, of 128 threads"),
            std::string::npos)
      << gpu::tile_path_text(p, a, 0, 64, 256);
  a = waved(16384, 1);
  EXPECT_EQ(a.waves, 1);
  EXPECT_EQ(*std::max_element(a.chunk_splits.begin(), a.chunk_splits.end()), 25);
  a = waved(16384 - 512, 0);  // 31 blocks
  EXPECT_EQ(a.waves, 1);
  EXPECT_EQ(gpu::tile_path_text(p, a, 0, 64, 256).find("times the blocks"), std::string::npos);
  a = waved(4096, 0);
  EXPECT_EQ(a.waves, 1);
  EXPECT_EQ(*std::max_element(a.chunk_splits.begin(), a.chunk_splits.end()), 99);
  a = waved(4096, 3);
  EXPECT_EQ(a.waves, 3);
  EXPECT_EQ(*std::max_element(a.chunk_splits.begin(), a.chunk_splits.end()), 297);
  a = waved(65536, 0);  // 128 blocks: ceil(1584 / 128) = 13
  EXPECT_EQ(a.waves, 2);
  EXPECT_EQ(*std::max_element(a.chunk_splits.begin(), a.chunk_splits.end()), 13);
  a = waved(16384, 0, 7);  // the knob
  EXPECT_EQ(a.waves, 1);
  for (int splits : a.chunk_splits) EXPECT_EQ(splits, 7);
  a = waved(792 * gpu::kTileBlockQueries, 2);  // the queries fill the device: no splits however many waves
  EXPECT_EQ(a.waves, 2);
  for (int splits : a.chunk_splits) EXPECT_EQ(splits, 2);
  EXPECT_EQ(waved(792 * gpu::kTileBlockQueries, 0).waves, 1);
}

// A chunk's stages: its 8-row groups, 16 a stage, the last padded, which is whole stages of 128 rows (the
// count tile_splits made itself before it took tile_stages); no overflow at 2^31 - 1 rows.
TEST(V15TilePlan, StagesOfAChunk) {
  static_assert(gpu::tile_stages(128 * 342) == 342);
  EXPECT_EQ(gpu::tile_stages(0), 0);
  EXPECT_EQ(gpu::tile_stages(1), 1);
  EXPECT_EQ(gpu::tile_stages(128), 1);
  EXPECT_EQ(gpu::tile_stages(129), 2);
  EXPECT_EQ(gpu::tile_stages(1 << 20), 8192);
  EXPECT_EQ(gpu::tile_stages(std::numeric_limits<int>::max()), 1 << 24);
  for (long long rows = 0; rows < 4096; ++rows) EXPECT_EQ(gpu::tile_stages(rows), (rows + 127) / 128) << rows;
}

// The bound covers the fp16 rounding of both factors and the fp32 norm on random and on worst-case
// values (each factor as far from fp16 as it gets: 1 + 2^-11 times a power of two, or just below fp16's
// normal range), with the products and sums taken exactly: what is left for the tensor core's own sums
// is at least the model's share. The scale keeps H·s in [1/2, 1).
TEST(V15TilePlan, ErrorBoundCoversFp16Rounding) {
  for (double h : {1e-6, 0.3, 0.5, 1.0, 499.5, 6400.0}) {
    const double s = gpu::tile_scale(h);
    EXPECT_GE(h * s, 0.5) << h;
    EXPECT_LT(h * s, 1.0) << h;
  }
  EXPECT_EQ(gpu::tile_scale(0.0), 1.0);
  std::mt19937_64 rng(48);
  for (int dim : {1, 3, 9, 12, 16})
    for (double hs : {0.5, 0.75, 0.999}) {
      const double bound = gpu::tile_score_error_bound(dim, hs);
      const double sums = 1.01 * 8.1 * (gpu::kTileDims + 1) * std::ldexp(1.0, -20) * dim * hs * hs;
      std::uniform_real_distribution<double> u(-hs, hs);
      double worst = 0;
      for (int trial = 0; trial < 4000; ++trial) {
        double exact = 0, computed = 0;
        float norm = 0.f;
        for (int i = 0; i < dim; ++i) {
          double x, y;
          if (trial % 4 == 0) {  // worst rounding: 2^e (1 + 2^-11), a tie rounded to even, 2^-11 of the value away
            const double v = std::ldexp(1.0 + std::ldexp(1.0, -11), std::ilogb(hs) - (hs == 0.5 ? 1 : 0));
            x = i % 2 ? -v : v, y = -v;
          } else if (trial % 4 == 1) {  // both factors below fp16's normal range (2^-14)
            x = std::ldexp(1.0, -17) * 1.37, y = -std::ldexp(1.0, -16) * 1.11;
          } else {
            x = u(rng), y = u(rng);
          }
          const float xf = float(x);  // the centred, scaled query and row values in fp32
          const float yf = float(y);
          norm = std::fma(yf, yf, norm);
          exact += double(yf) * double(yf) - 2.0 * double(xf) * double(yf);
          computed += to_fp16(-2.0 * xf) * to_fp16(yf);
        }
        computed += double(norm);
        worst = std::max(worst, std::fabs(computed - exact));
      }
      EXPECT_LE(worst, bound - sums) << "k = " << dim << ", h = " << hs;
      EXPECT_LE(bound, 1.2 * std::ldexp(1.0, -9) * dim * hs * hs + dim * std::ldexp(1.0, -21) + std::ldexp(1.0, -12)) << dim;
    }
}

// The fp32 filter's rule: topk 1, k < 8, finite examined values, and in the automatic mode
// enough queries and rows; the reasons name the rule.
TEST(V15Fp32Plan, TakenOnlyWhereItApplies) {
  std::vector<float> points(3 * 1000, 0.5f);
  Problem p{3, 1000, 1 << 20, 1, points.data(), points.data()};
  EXPECT_EQ(gpu::plan_fp32(p, gpu::Fp32Mode::automatic).why, "values not examined");
  p.values = ValueTraits{true, false, -1.f, 3.f, true};
  gpu::Fp32Plan a = gpu::plan_fp32(p, gpu::Fp32Mode::automatic);
  ASSERT_TRUE(a.chosen) << a.why;
  EXPECT_EQ(a.center, 1.f);
  EXPECT_GE(a.half_span, 2.f);
  EXPECT_LE(a.half_span, 2.f * (1 + 1e-5f));
  EXPECT_GE(double(a.band), gpu::fp32_score_error_bound(3, 2.0));
  EXPECT_EQ(a.queries_per_thread, gpu::kFp32Queries);
  EXPECT_EQ(gpu::plan_fp32(p, gpu::Fp32Mode::off).why, "fp32_filter=off");
  p.m = gpu::kFp32MinQueries - 1;
  EXPECT_NE(gpu::plan_fp32(p, gpu::Fp32Mode::automatic).why.find("pays from k ≥ 2, m ≥ 32 and n ≥ 1048576"),
            std::string::npos);
  EXPECT_TRUE(gpu::plan_fp32(p, gpu::Fp32Mode::on).chosen);
  p.m = 1000, p.n = gpu::kFp32MinRows - 1;
  EXPECT_FALSE(gpu::plan_fp32(p, gpu::Fp32Mode::automatic).chosen);
  EXPECT_TRUE(gpu::plan_fp32(p, gpu::Fp32Mode::on).chosen);
  p.dim = 8;
  EXPECT_NE(gpu::plan_fp32(p, gpu::Fp32Mode::on).why.find("k = 8 > 7"), std::string::npos);
  p.dim = 1, p.n = 1 << 20;  // k = 1: the scan's pair is cheaper than a score
  EXPECT_FALSE(gpu::plan_fp32(p, gpu::Fp32Mode::automatic).chosen);
  EXPECT_TRUE(gpu::plan_fp32(p, gpu::Fp32Mode::on).chosen);
  p.dim = 3, p.topk = 2;
  EXPECT_NE(gpu::plan_fp32(p, gpu::Fp32Mode::on).why.find("topk 2: the filter keeps one neighbour"), std::string::npos);
  p.topk = 1, p.values.finite = false;
  EXPECT_EQ(gpu::plan_fp32(p, gpu::Fp32Mode::on).why, "not every value is finite");
  p.values = ValueTraits{true, false, -3e18f, 3e18f, true};
  EXPECT_NE(gpu::plan_fp32(p, gpu::Fp32Mode::on).why.find("could overflow"), std::string::npos);
  p.values = ValueTraits{true, false, 0.f, 1.f, true};
  EXPECT_EQ(gpu::plan_fp32(p, gpu::Fp32Mode::on, 4).queries_per_thread, 4);
  // fp32_stage: auto stages from 32 query slots (m >= 249 at 8 queries a thread, 125 at 4).
  for (const auto& [m, queries, want] : {std::tuple{248, 8, false}, {249, 8, true}, {124, 4, false}, {125, 4, true}}) {
    p.m = m;
    EXPECT_EQ(gpu::plan_fp32(p, gpu::Fp32Mode::on, queries).stage, want) << "m = " << m;
    EXPECT_EQ(gpu::plan_fp32(p, gpu::Fp32Mode::on, queries, want ? Mode::off : Mode::on).stage, !want) << "m = " << m;
  }
}

// The fp32 score as the kernel computes it (fp32 centring, a product then fused multiply-adds
// for the norm, fused multiply-adds for the score), against the true score in double, on values
// spread over [c - H, c + H] for several k, centres and spreads: never off by more than the
// bound, and the bound not absurdly loose.
TEST(V15Fp32Plan, ErrorBoundCoversTheFp32Score) {
  std::uint64_t state = 12345;
  const auto uniform = [&state]() {  // in [0, 1)
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(state >> 11) * 0x1p-53;
  };
  for (int dim = 1; dim <= gpu::kFp32MaxDim; ++dim) {
    double tightest = 0;  // the largest error seen for this k, as a share of its bound
    for (const auto& [center, half] : {std::pair{0.f, 1.f}, {6400.f, 1.f}, {0.5f, 0.5f}, {-3.f, 1000.f}}) {
      const double bound = gpu::fp32_score_error_bound(dim, double(half) * (1 + 0x1p-20));
      double worst = 0;
      for (int trial = 0; trial < 20000; ++trial) {
        float q[8], r[8];
        for (int t = 0; t < dim; ++t) {
          q[t] = float(center + half * (2 * uniform() - 1));
          r[t] = float(center + half * (2 * uniform() - 1));
        }
        float x[8], norm = 0.f;
        for (int t = 0; t < dim; ++t) x[t] = r[t] - center;
        norm = x[0] * x[0];
        for (int t = 1; t < dim; ++t) norm = std::fmaf(x[t], x[t], norm);
        float score = norm;
        for (int t = 0; t < dim; ++t) score = std::fmaf(-2.f * (q[t] - center), x[t], score);
        double truth = 0;
        for (int t = 0; t < dim; ++t) {
          const double xr = double(r[t]) - center, xq = double(q[t]) - center;
          truth += xr * xr - 2 * xq * xr;
        }
        worst = std::max(worst, std::fabs(double(score) - truth));
      }
      EXPECT_LE(worst, bound) << "k " << dim << " centre " << center << " half " << half;
      tightest = std::max(tightest, worst / bound);
    }
    // Values near 6400 with a spread of 1 centre exactly (no error at all at k = 1); the others round.
    EXPECT_GE(tightest, 1.0 / 200) << "k " << dim;
  }
}

TEST(V15TcPlan, ExamineValuesReportsTheRangeOfFiniteData) {
  const std::vector<float> q = {0.25f, -7.5f}, r = {3.f};
  ValueTraits t = examine_values(q.data(), q.size(), r.data(), r.size());
  EXPECT_TRUE(t.finite);
  EXPECT_FALSE(t.whole);
  EXPECT_EQ(t.lowest, -7.5f);
  EXPECT_EQ(t.highest, 3.f);
  std::vector<float> bad = r;
  bad.push_back(std::numeric_limits<float>::infinity());
  t = examine_values(q.data(), q.size(), bad.data(), bad.size());
  EXPECT_FALSE(t.finite);
  EXPECT_FALSE(t.whole);
  bad.back() = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(examine_values(q.data(), q.size(), bad.data(), bad.size()).finite);
}

}  // namespace

// The seed's rule (kernels/bruteforce/detail/seed/scan_seed.hpp), with the reason printed when it is not
// taken.
TEST(V15SeedPlan, TakenOnlyWhereItApplies) {
  const auto plan = [](int m, int n, int dim, int topk, int chunks, Mode mode) {
    return gpu::plan_seed(m, n, dim, topk, chunks, mode);
  };
  EXPECT_TRUE(plan(200064, 200064, 2, 32, 1, Mode::automatic).chosen);
  EXPECT_EQ(plan(200064, 200064, 2, 32, 1, Mode::automatic).window, 128);
  EXPECT_EQ(plan(5000, 5000, 2, 2, 1, Mode::on).window, gpu::kSeedMinWindow);
  EXPECT_EQ(plan(5000, 5000, 2, 32, 1, Mode::off).why, "seed=off");
  EXPECT_EQ(plan(5000, 5000, 2, 1, 1, Mode::on).why, "topk 1 (the seed serves the register lists, topk 2..32)");
  EXPECT_EQ(plan(5000, 5000, 2, 33, 1, Mode::on).why, "topk 33 (the seed serves the register lists, topk 2..32)");
  EXPECT_EQ(plan(5000, 5000, 10, 8, 1, Mode::on).why, "k = 10 (Morton order up to k = 9)");
  EXPECT_TRUE(plan(5000, 5000, 9, 8, 1, Mode::on).chosen);
  EXPECT_EQ(plan(5000, 5000, 2, 8, 3, Mode::on).why, "3 chunks of references (the seed needs them all before the scan)");
  // "on" ignores the automatic rule's sizes; "auto" needs both.
  EXPECT_TRUE(plan(1, 1, 2, 8, 1, Mode::on).chosen);
  EXPECT_EQ(plan(1023, 1 << 20, 2, 8, 1, Mode::automatic).why, "m = 1023 < 1024 queries");
  EXPECT_EQ(plan(1024, 1023, 2, 8, 1, Mode::automatic).why, "n = 1023 < 16 windows of 64 rows");
  EXPECT_TRUE(plan(1024, 1024, 2, 8, 1, Mode::automatic).chosen);
  EXPECT_FALSE(plan(4096, 2047, 2, 32, 1, Mode::automatic).chosen);
  EXPECT_TRUE(plan(4096, 2048, 2, 32, 1, Mode::automatic).chosen);
  EXPECT_TRUE(plan(4096, 4096, 5, 8, 1, Mode::automatic).chosen);
  EXPECT_EQ(plan(4096, 4096, 6, 8, 1, Mode::automatic).why, "k = 6 > 5 (seed=on seeds up to k = 9)");
}

// The candidate buffers: where they run, their capacity, queries per thread and splits.
TEST(V15CollectPlan, TakenOnlyWhereItAppliesAndFillsTheDevice) {
  const int sms = 132;  // an H100
  const auto plan = [&](int m, int n, int dim, int topk, bool seeded = true, Mode mode = Mode::automatic, int q = 0,
                        int sm_count = 0) {
    return gpu::plan_collect(m, n, dim, topk, seeded, sm_count > 0 ? sm_count : sms, mode, q);
  };
  EXPECT_EQ(plan(5000, 5000, 2, 8, true, Mode::off).why, "collect=off");
  EXPECT_EQ(plan(5000, 5000, 2, 8, false).why, "no seed");
  EXPECT_EQ(plan(5000, 5000, 6, 8).why, "k = 6 (compiled for k <= 5)");
  EXPECT_EQ(plan(5000, 5000, 2, 2).capacity, gpu::kCollectMinCapacity);
  EXPECT_EQ(plan(5000, 5000, 2, 32).capacity, 4 * 32);
  // Case 200: 1516 queries per SM take two per thread (782 blocks); two splits fill 8 blocks per SM.
  const gpu::CollectPlan c200 = plan(200064, 200064, 2, 32);
  EXPECT_TRUE(c200.chosen);
  EXPECT_EQ(c200.queries_per_thread, 2);
  EXPECT_EQ(c200.query_groups, 782);
  EXPECT_EQ(c200.splits, 2);
  EXPECT_LE(c200.buffer_bytes(200064), gpu::kCollectBudget);
  // Twice the SMs would want three splits; the budget allows two (410 MB).
  EXPECT_EQ(plan(200064, 200064, 2, 32, true, Mode::automatic, 0, 2 * sms).splits, 2);
  // Case 201 (8192 queries): one query per thread, four splits (at least 2048 rows each).
  EXPECT_EQ(plan(8192, 8192, 2, 32).queries_per_thread, 1);
  EXPECT_EQ(plan(8192, 8192, 2, 32).splits, 4);
  EXPECT_FALSE(c200.balanced);
  gpu::CollectPlan c200_on = c200;  // balanced, a group's rows would span three blocks: over the budget
  gpu::balance_collect(c200_on, 200064, 200064, sms * gpu::kCollectBlocksPerSm, Mode::on);
  EXPECT_FALSE(c200_on.balanced);
  EXPECT_EQ(c200_on.splits, 2);
  EXPECT_EQ(c200.blocks(), 782 * 2);
  // Case 405: four queries per thread, 2048 groups of whole rows, one split (the device is full):
  // 256 MiB of buffers of 32 keys.
  const gpu::CollectPlan c405 = plan(1 << 20, 1 << 20, 5, 5);
  EXPECT_EQ(c405.queries_per_thread, 4);
  EXPECT_FALSE(c405.balanced);
  EXPECT_EQ(c405.splits, 1);
  EXPECT_EQ(c405.blocks(), 2048);
  EXPECT_EQ(c405.buffer_bytes(1 << 20), std::size_t(256) << 20);
  // collect_balance=on: one balanced wave of 8 blocks per SM, so a group's rows span at
  // most two blocks: 512 MiB.
  gpu::CollectPlan wave = c405;
  gpu::balance_collect(wave, 1 << 20, 1 << 20, sms * gpu::kCollectBlocksPerSm, Mode::on);
  EXPECT_TRUE(wave.balanced);
  EXPECT_EQ(wave.blocks(), sms * gpu::kCollectBlocksPerSm);
  EXPECT_EQ(wave.splits, 2);
  EXPECT_EQ(wave.buffer_bytes(1 << 20), std::size_t(512) << 20);
  // The rule's edges.
  EXPECT_EQ(plan(sms * gpu::kCollectQueriesPerSmFor4, 1 << 20, 3, 2).queries_per_thread, 4);
  EXPECT_EQ(plan(sms * gpu::kCollectQueriesPerSmFor4 - 1, 1 << 20, 3, 2).queries_per_thread, 2);
  EXPECT_EQ(plan(sms * gpu::kCollectQueriesPerSmFor2, 1 << 20, 3, 2).queries_per_thread, 2);
  EXPECT_EQ(plan(sms * gpu::kCollectQueriesPerSmFor2 - 1, 1 << 20, 3, 2).queries_per_thread, 1);
  // Few queries: splits of at least kCollectMinRowsPerSplit rows.
  const gpu::CollectPlan few = plan(100, 40009, 1, 9);
  EXPECT_EQ(few.query_groups, 1);
  EXPECT_EQ(few.splits, 40009 / gpu::kCollectMinRowsPerSplit);
  EXPECT_EQ(plan(100, 2047, 1, 9).splits, 1);
  // A forced Q.
  EXPECT_EQ(plan(200064, 200064, 2, 32, true, Mode::automatic, 4).queries_per_thread, 4);
  EXPECT_EQ(plan(200064, 200064, 2, 32, true, Mode::automatic, 4).query_groups, 391);
  // The budget: without room for one split the buffers are not taken.
  const int m_one = int(gpu::kCollectBudget / (128 * sizeof(unsigned long long)));
  EXPECT_TRUE(plan(m_one, 1 << 22, 2, 32).chosen);
  EXPECT_EQ(plan(m_one, 1 << 22, 2, 32).splits, 1);
  EXPECT_EQ(plan(m_one + 1, 1 << 22, 2, 32).why, "the buffers would take 512 MiB (at most 512)");
}

// The balanced ranges cover every (query group, row group) unit exactly once, a block's pieces in
// order, and each group's pieces are numbered 0, 1, ... below the plan's splits, whatever the grid.
TEST(V15CollectPlan, BalancedRangesCoverEveryUnitOnceWithinTheSplits) {
  struct Shape { int m, n, q; long long resident; };
  const Shape shapes[] = {{1 << 20, 1 << 20, 4, 924},  {1 << 20, 1 << 20, 4, 1056}, {200064, 200064, 2, 1000},
                          {8192, 8192, 1, 924},        {100, 40009, 1, 924},        {5000, 5003, 1, 7},
                          {70000, 65537, 2, 300},      {1000, 2047, 1, 924},        {300000, 9000, 4, 1321}};
  for (const Shape& sh : shapes) {
    gpu::CollectPlan c = gpu::plan_collect(sh.m, sh.n, 3, 8, true, 132, Mode::automatic, sh.q);
    ASSERT_TRUE(c.chosen);
    gpu::balance_collect(c, sh.m, sh.n, sh.resident, Mode::on);
    SCOPED_TRACE(::testing::Message() << "m " << sh.m << " n " << sh.n << " resident " << sh.resident << " grid "
                                      << c.grid << " splits " << c.splits << (c.balanced ? " balanced" : " aligned"));
    EXPECT_LE(c.splits, gpu::collect_max_splits(c, sh.m, sh.n));
    EXPECT_LE(c.buffer_bytes(sh.m), gpu::kCollectBudget);
    EXPECT_LE(c.grid, std::max<long long>(sh.resident, c.query_groups));
    const long long rg = (sh.n + gpu::kScanGroup - 1) / gpu::kScanGroup, units = c.query_groups * rg;
    std::vector<int> seen(std::size_t(c.query_groups) * c.splits, 0);
    long long next = 0;  // the units, in order
    for (long long b = 0; b < c.grid; ++b) {
      const gpu::CollectRange r = gpu::collect_range(b, rg, c.query_groups, c.grid, c.splits, c.balanced);  // the kernel's
      const long long lo = r.lo, hi = r.hi;
      ASSERT_EQ(lo, next);
      ASSERT_LT(lo, hi) << "block " << b << " has no rows";
      next = hi;
      for (long long g = lo / rg; g <= (hi - 1) / rg; ++g) {  // the kernel's pieces
        const long long piece = g != lo / rg ? 0 : r.piece;
        ASSERT_GE(piece, 0);
        ASSERT_LT(piece, c.splits) << "block " << b << " group " << g;
        EXPECT_EQ(seen[g * c.splits + piece]++, 0) << "block " << b << " group " << g << " piece " << piece;
      }
    }
    EXPECT_EQ(next, units);
    if (c.balanced) {  // equal work: block sizes differ by at most one unit
      const long long least = units / c.grid;
      for (long long b = 0; b < c.grid; ++b) {
        const long long size = gpu::collect_begin(units, b + 1, c.grid) - gpu::collect_begin(units, b, c.grid);
        ASSERT_TRUE(size == least || size == least + 1) << "block " << b;
      }
    }
  }
}

// The tensor cores' geometry: blocks of 256 queries, 4 buffers (lanes) per query and split of the
// rows, max(16, 2 topk) keys each, within the budget; a plan that would not fit is left as it was.
TEST(V15CollectPlan, TensorCoresGeometry) {
  const auto plan = [](int m, int n, int topk) {
    return gpu::plan_collect(m, n, 5, topk, true, 132, Mode::automatic);
  };
  gpu::CollectPlan c405 = plan(1 << 20, 1 << 20, 5);
  ASSERT_TRUE(gpu::plan_collect_tensor(c405, 1 << 20, 1 << 20, 5, 132, false));
  EXPECT_TRUE(c405.tensor);
  EXPECT_FALSE(c405.tensor_split);
  EXPECT_EQ(c405.query_groups, 4096);
  EXPECT_EQ(c405.capacity, gpu::kCollectTcMinCapacity);
  EXPECT_EQ(c405.splits, gpu::kCollectTcLanes);  // 4096 blocks fill 132 SMs: one split of the rows
  EXPECT_EQ(c405.blocks(), 4096);
  EXPECT_EQ(c405.buffer_bytes(1 << 20), std::size_t(512) << 20);
  // Few queries: splits of the rows (at least kCollectMinRowsPerSplit rows each) up to 8 blocks per SM.
  gpu::CollectPlan few = plan(300, 40009, 9);
  ASSERT_TRUE(gpu::plan_collect_tensor(few, 300, 40009, 9, 132, true));
  EXPECT_TRUE(few.tensor_split);
  EXPECT_EQ(few.capacity, 18);
  EXPECT_EQ(few.query_groups, 2);
  EXPECT_EQ(few.splits, gpu::kCollectTcLanes * (40009 / gpu::kCollectMinRowsPerSplit));
  EXPECT_EQ(few.blocks(), 2 * (40009 / gpu::kCollectMinRowsPerSplit));
  // auto offers the tensor cores k 4..5, topk <= 8, from 65536 queries.
  EXPECT_TRUE(gpu::collect_tc_auto(1 << 20, 5, 5));
  EXPECT_TRUE(gpu::collect_tc_auto(gpu::kCollectMinJoinQueries, 4, 8));
  EXPECT_FALSE(gpu::collect_tc_auto(gpu::kCollectMinJoinQueries - 1, 5, 5));
  EXPECT_FALSE(gpu::collect_tc_auto(1 << 20, 3, 5));
  EXPECT_FALSE(gpu::collect_tc_auto(1 << 20, 5, 9));
  // The gate's bounds: a query below 2E / (inflation^(2/k) - 1) lets more than `inflation` x its
  // topk rows' worth pass the band E.
  EXPECT_NEAR(gpu::collect_tc_gate_bound(1.f, 4, 2), 2.0 / 15.0, 1e-6);             // inflation 256, k 4
  EXPECT_NEAR(gpu::collect_tc_gate_bound(1.f, 5, 2), 2.0 / (std::pow(256.0, 0.4) - 1.0), 1e-6);
  EXPECT_NEAR(gpu::collect_tc_gate_bound(0.5f, 4, 0), 1.0 / 3.0, 1e-6);            // inflation 16
  for (int l = 1; l < gpu::kCollectTcGateLevels; ++l)  // higher inflation: lower bounds
    EXPECT_LT(gpu::collect_tc_gate_bound(1.f, 5, l), gpu::collect_tc_gate_bound(1.f, 5, l - 1));
  // Over the budget: four lanes' buffers of 64 keys for 2^18 + 1 queries take 512 MiB and more.
  gpu::CollectPlan big = plan((1 << 18) + 1, 1 << 20, 32);
  ASSERT_TRUE(big.chosen);
  EXPECT_FALSE(gpu::plan_collect_tensor(big, (1 << 18) + 1, 1 << 20, 32, 132, false));
  EXPECT_FALSE(big.tensor);
}

// Before the filters and a chunked copy: joins from kCollectMinJoinQueries queries (case 405), any
// m with collect=on, never where the seed or the buffers could not run.
TEST(V15CollectPlan, FirstForJoinsOfManyQueries) {
  const auto first = [](int m, int n, int dim, int topk, Mode collect = Mode::automatic, Mode seed = Mode::automatic) {
    return gpu::collect_first(m, n, dim, topk, collect, seed);
  };
  EXPECT_TRUE(first(1 << 20, 1 << 20, 5, 5));  // case 405
  EXPECT_TRUE(first(gpu::kCollectMinJoinQueries, 1 << 20, 3, 8));
  EXPECT_FALSE(first(gpu::kCollectMinJoinQueries - 1, 1 << 20, 3, 8));
  EXPECT_TRUE(first(1024, 1 << 18, 3, 8, Mode::on, Mode::on));
  EXPECT_TRUE(first(300, (1 << 20) + 3, 2, 8, Mode::on, Mode::on));
  EXPECT_FALSE(first(300, (1 << 20) + 3, 2, 8, Mode::on, Mode::automatic));  // the seed's rule: m >= 1024
  EXPECT_FALSE(first(1 << 20, 1 << 20, 6, 5));
  EXPECT_FALSE(first(1 << 20, 1 << 20, 5, 5, Mode::off));
  EXPECT_FALSE(first(1 << 20, 1 << 20, 5, 5, Mode::automatic, Mode::off));
  EXPECT_FALSE(first(1 << 20, 1 << 20, 5, 1));
  EXPECT_FALSE(first(1 << 20, 1 << 20, 5, 33));
  EXPECT_FALSE(first(1 << 21, 1 << 21, 3, 32));  // 2 GiB of buffers
}
