// v15's engine's declared parameters and the settings read from their values (kernels/bruteforce/engine.hpp).
// Plain C++: v18 declares them in builds without CUDA too.
#include "kernels/bruteforce/engine.hpp"

namespace knn::gpu {

std::vector<ParamDecl> engine_params() {
  using P = ParamDecl;
  return {
      P::mode("int8", "the exact int8 tensor-core path; auto: whole numbers within 256 values, k >= 16, m >= 32", "KNN_V15_INT8"),
      P::choice("int8_chunks", "auto", {"auto", "1", "2", "3", "4", "5", "6", "7", "8", "10", "12", "16", "24", "32"},
                "the int8 path's references copied in chunks, each searched as it lands; auto: sqrt(reference bytes / 3.3 MB) chunks, "
                "at most 16, one for self-joins and under about 7 MB (1: one copy, then the search)"),
      P::flag("int8_ramp", true,
              "the int8 path's first reference chunk cut in two halves, so the search starts after half its copy (off: equal chunks)"),
      P::mode("tc", "the tensor-core (TF32) filter; auto: topk 1 at k >= 8, m >= 64, n >= 2^18; topk 2..32 at k >= 3, m >= 1024, n >= 2^18",
              "KNN_V15_TC"),
      P::mode("tc_split", "the tensor-core filter's values split into hi + lo TF32; auto: below 8 dimensions (on: k <= 8)",
              "KNN_V15_TC_SPLIT"),
      P::mode("tc_tile",
              "the tile filter: the tensor-core filter's scores as fp16 products of 16 dimensions from 1024 queries (k <= 16, topk <= 16); "
              "auto: k >= 5, m >= 1024, n >= 2^17 (2^16 at topk 1); below 2^19 queries each chunk's rows are split among blocks"),
      P::integer("tile_splits", 0, 0, 4096,
                 "the tile filter's blocks along each chunk's rows per 512 queries (their keys merged in global memory); 0: the rule "
                 "(enough to fill the device once, none under 4 stages of 128 rows)"),
      P::integer("tile_waves", 0, 0, 16,
                 "how many times over the tile filter's split rule (tile_splits=0) fills the device: more, smaller blocks along each "
                 "chunk's rows; 0: the rule (2 from 32 blocks of 512 queries while the queries alone leave SMs idle, else 1)"),
      P::mode("grid",
              "the query grid: few queries (m <= 2048, k <= 3, topk <= 32) sorted into cells, each row meeting only the cells their "
              "bounds reach; auto: topk 1, k <= 2, m >= 1024, n >= 2^20"),
      P::flag("shared_lists", true, "the tensor-core filter's topk > 1 lists in shared memory where they fit (off: global memory)",
              "KNN_V15_SHARED_LISTS"),
      P::mode("fp32_filter", "the fp32 filter on CUDA cores (topk 1, k <= 7); auto: k >= 2, m >= 32, n >= 2^20", "KNN_V15_FP32_FILTER"),
      P::choice("fp32_queries", "8", {"4", "8"}, "the fp32 filter's queries per thread (default 8)", "KNN_V15_FP32_QUERIES"),
      P::mode("fp32_stage", "the fp32 filter's rows staged in shared memory; auto: from 32 query slots", "KNN_V15_FP32_STAGE"),
      P::mode("seed", "the seed's per-query bounds before the scan (topk 2..32, one chunk); auto: k <= 5, m >= 1024, n >= 16 windows",
              "KNN_V15_SEED"),
      P::mode("collect",
              "the seed's candidate buffers instead of the register lists; auto: where the seed runs at k <= 5, first from m >= 2^16 "
              "(on: at any m)",
              "KNN_V15_COLLECT"),
      P::choice("collect_queries", "auto", {"auto", "1", "2", "4"}, "the buffers' queries per thread; auto: by queries per SM",
                "KNN_V15_COLLECT_QUERIES"),
      P::mode("collect_scores", "the buffers' fp32 scores before exact distances; auto and on: where the values are known and finite",
              "KNN_V15_COLLECT_SCORES"),
      P::mode("collect_tc", "the buffers' scores from the tensor cores; auto: k 4..5, topk <= 8, m >= 2^16, then a gate on the seed's bounds",
              "KNN_V15_COLLECT_TC"),
      P::mode("collect_balance", "the buffers' blocks sharing the rows equally in one wave; on only (auto: whole groups, as off)",
              "KNN_V15_COLLECT_BALANCE"),
      P::flag("ramp", true,
              "the first chunks growing from 512 KiB: the scan's from 64 queries, the tile filter's where its rows are split (off: equal chunks)",
              "KNN_V15_RAMP"),
      P::flag("taper", true, "the scan's last chunk halved for fewer than 64 queries at topk 1 (off: whole)", "KNN_V15_TAPER"),
      P::integer("min_groups", 0, 0, 1 << 20,
                 "the fewest 4-row groups a thread scans in its split; 0: the rule (4 at topk 1, fewer where that leaves SMs idle; 16 otherwise, "
                 "more for few queries' heaps)",
                 "KNN_V15_MIN_GROUPS"),
      P::flag("one_stream", false, "with one chunk of references, the search on the copy stream (off, the default: a second stream, as with several chunks)"),
      P::mode("host_keys",
              "topk 1's scan: each query's packed key downloaded once into pinned memory and unpacked on the host (no unpack kernel, one "
              "download instead of two); auto: up to 4096 queries and 256 KiB of references"),
      P::flag("merge_runs", true, "the merge's reduction passes over runs for fewer queries than SMs (off: each query's keys sorted at once)",
              "KNN_V15_MERGE_RUNS"),
  };
}

EngineSettings settings_from(const ParamValues& v) {
  EngineSettings s;
  s.int8 = v.mode("int8"), s.int8_chunks = v.text("int8_chunks") == "auto" ? 0 : int(v.integer("int8_chunks"));
  s.int8_ramp = v.on("int8_ramp");
  s.tc = v.mode("tc"), s.tc_split = v.mode("tc_split"), s.tc_tile = v.mode("tc_tile"), s.tile_splits = int(v.integer("tile_splits")), s.tile_waves = int(v.integer("tile_waves")), s.grid = v.mode("grid"), s.shared_lists = v.on("shared_lists");
  s.fp32_filter = v.mode("fp32_filter"), s.fp32_queries = int(v.integer("fp32_queries")), s.fp32_stage = v.mode("fp32_stage");
  s.seed = v.mode("seed"), s.collect = v.mode("collect");
  s.collect_queries = v.text("collect_queries") == "auto" ? 0 : int(v.integer("collect_queries"));
  s.collect_scores = v.mode("collect_scores"), s.collect_tc = v.mode("collect_tc"), s.collect_balance = v.mode("collect_balance");
  s.ramp = v.on("ramp"), s.taper = v.on("taper"), s.min_groups = int(v.integer("min_groups")), s.merge_runs = v.on("merge_runs");
  s.one_stream = v.on("one_stream"), s.host_keys = v.mode("host_keys");
  return s;
}

}  // namespace knn::gpu
