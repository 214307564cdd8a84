#pragma once
// v17's declared parameters (kernels/trees/rtree/v17_rtree_join.cu). Plain C++: the tests check the
// declarations in builds without CUDA too.
#include <vector>

#include "core/params.hpp"
#include "kernels/trees/rtree/str_pack.hpp"

namespace knn::gpu {

inline std::vector<ParamDecl> v17_params() {
  return {ParamDecl::integer("fanout", 32, str::kMinFanout, str::kMaxFanout, "the R-tree's fan-out (default 32)", "KNN_V17_FANOUT")};
}

}  // namespace knn::gpu
