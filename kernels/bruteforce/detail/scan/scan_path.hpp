#pragma once
// The fused scan's path text (v15_fused_topk.cu), from facts copied out of the call so that it can be
// formatted after the call (RunContext::path_later): on the smallest problems the formatting cost
// several per cent of the call.
#include <fmt/format.h>

#include <string>
#include <utility>

#include "kernels/bruteforce/detail/scan/scan_plan.hpp"

namespace knn::gpu {

struct ScanPathFacts {
  int dim = 0;
  bool compiled = false;          // k compiled in (scan::compiled_dim)
  std::string list;               // scan::list_name
  ScanPlan plan;
  bool ramp = true;
  long long partials = 1;
  std::string merge;              // " merged by ..." or " written in place"
  bool one_stream = false;
  bool seeded = false;
  int seed_window = 0;
  std::string seed_why, collect_why;
  bool known = false, filters_apply = false;  // the values' traits known; topk within the filters' limit
  std::string int8_why, tc_why, f32_why;
  std::string grid_why;  // the query grid's reason (query_grid.hpp), printed whenever it is given
};

inline std::string scan_path_text(const ScanPathFacts& f) {
  const ScanPlan& plan = f.plan;
  std::string path = fmt::format(
      "{}, {} ({} quer{} per thread); blocks of {} = {} query x {} row threads, {} query group{} x {} split{} x {}; "
      "{} partial list{} per query{}",
      f.compiled ? fmt::format("k={} compiled in", f.dim) : std::string("k at run time"), f.list, plan.queries_per_thread,
      plan.queries_per_thread == 1 ? "y" : "ies", kScanBlock, plan.query_threads, plan.ref_threads, plan.query_groups,
      plan.query_groups == 1 ? "" : "s", plan.splits, plan.splits == 1 ? "" : "s", chunks_text(plan.chunk_rows, f.dim, f.ramp, f.one_stream),
      f.partials, f.partials == 1 ? "" : "s", f.merge);
  path += f.seeded ? fmt::format("; seeded: each query's bound from the {} rows around it in Morton order, "
                                 "queries scanned in that order; candidate buffers not taken: {}", f.seed_window, f.collect_why)
                   : "; seed not taken: " + f.seed_why;
  if (f.known) path += fmt::format("; exact int8 path not taken: {}", f.int8_why);
  if (f.known && f.filters_apply) path += fmt::format("; tensor-core filter not taken: {}; fp32 filter not taken: {}", f.tc_why, f.f32_why);
  if (!f.grid_why.empty()) path += "; query grid not taken: " + f.grid_why;
  return path;
}

}  // namespace knn::gpu
