#pragma once
// v17's declared parameters (kernels/trees/rtree/v17_rtree_join.cu). Plain C++: the tests check the
// declarations in builds without CUDA too.
#include <vector>

#include "core/params.hpp"
#include "kernels/trees/rtree/str_pack.hpp"

namespace knn::gpu {

inline std::vector<ParamDecl> v17_params() {
  return {ParamDecl::integer("fanout", 32, str::kMinFanout, str::kMaxFanout, "the R-tree's fan-out (default 32)", "KNN_V17_FANOUT"),
          ParamDecl::choice("answers", "direct", {"direct", "copy"},
                            "how the answers reach the output: direct (the join kernel writes each finished query leaf's rows "
                            "into the pinned output, overlapping the copy with the join; copied where the output is not "
                            "pinned) or copy (one copy after the join); default direct")};
}

}  // namespace knn::gpu
