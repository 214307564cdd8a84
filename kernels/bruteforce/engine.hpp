#pragma once
// v15's engine (kernels/bruteforce/v15_fused_topk.cu) as a function, for versions that search a part of a
// problem with it (v18 searches each rank's shard): the device is ctx.env.devices[0], the settings
// ctx.env.params (the engine's parameters, engine_params(), declared by every version that runs it).
#include <vector>

#include "core/params.hpp"
#include "core/problem.hpp"
#include "core/registry.hpp"

namespace knn::gpu {

inline constexpr int kFusedTopkMax = 2048;  // v15's largest topk
void fused_topk_search(const Problem& p, Neighbors out, RunContext& ctx);

// The engine's settings for one call, read in one place from the declared parameters
// (kernels/bruteforce/README.md lists what each switches; engine_params() their kinds and defaults).
struct EngineSettings {
  Mode int8 = Mode::automatic;             // the exact int8 path
  int int8_chunks = 0;                     // its references copied in this many chunks under the search; 0 the rule
  bool int8_ramp = true;                   // its first chunk cut in two halves
  Mode tc = Mode::automatic;               // the tensor-core filter
  Mode tc_split = Mode::automatic;         // its values split into hi + lo TF32
  Mode tc_tile = Mode::automatic;          // the tile filter (fp16 products, from 1024 queries)
  int tile_splits = 0;                     // its blocks along each chunk's rows below 2^19 queries; 0 the rule
  int tile_waves = 0;                      // the rule's times over the device; 0 the rule
  Mode grid = Mode::automatic;             // the query grid (few queries, k <= 3)
  bool shared_lists = true;                // its topk > 1 lists in shared memory where they fit
  Mode fp32_filter = Mode::automatic;      // the fp32 filter
  int fp32_queries = 8;                    // its queries per thread: 4 or 8
  Mode fp32_stage = Mode::automatic;       // its rows staged in shared memory
  Mode seed = Mode::automatic;             // the seed's bounds
  Mode collect = Mode::automatic;          // the seed's candidate buffers
  int collect_queries = 0;                 // their queries per thread: 1, 2 or 4; 0 by queries per SM
  Mode collect_scores = Mode::automatic;   // their fp32 scores
  Mode collect_tc = Mode::automatic;       // their scores from the tensor cores
  Mode collect_balance = Mode::automatic;  // their blocks sharing the rows equally (on only)
  bool ramp = true, taper = true;          // the scan's chunks: growing first ones, a halved last one
  int min_groups = 0;                      // the fewest row groups a thread scans in its split; 0 the rule
  bool merge_runs = true;                  // the merge's reduction passes
  bool one_stream = false;                 // one chunk: the search on the copy stream
  Mode host_keys = Mode::automatic;        // topk 1's scan: keys unpacked on the host
};

// The declarations of the engine's parameters (v15's, and v18's, which runs the engine on each rank).
std::vector<ParamDecl> engine_params();
// The settings from the values of engine_params() (the harness checked them against the declarations).
EngineSettings settings_from(const ParamValues& values);

}  // namespace knn::gpu
