#pragma once
// v14's declared parameters (kernels/warpshuffle/v14_warp_shuffle_topk.cu). Plain C++: the tests check
// the declarations in builds without CUDA too.
#include <vector>

#include "core/params.hpp"

namespace knn::gpu {

inline std::vector<ParamDecl> v14_params() {
  return {ParamDecl::choice("queries_per_thread", "auto", {"auto", "1", "2"},
                            "queries per thread; auto: 1 (2 measured 2.4x slower on an H100)", "KNN_V14_QUERIES_PER_THREAD")};
}

}  // namespace knn::gpu
