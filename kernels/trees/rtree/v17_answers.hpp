#pragma once
// How v17's answers reach the harness's output (parameter v17.answers), as a host rule the CPU tests
// check. The join writes each query's row at the query's own row of the output, and a query leaf's
// queries are scattered over the whole output (the STR order is spatial), so no range of query
// leaves finishes a contiguous block of rows that a copy engine could move while the join goes on.
// "direct" therefore has the join kernel itself write each leaf's finished rows into the output,
// row by row, when the output is pinned host memory the device can address (cudaMallocHost memory,
// mapped through unified addressing): the copy runs during the join instead of after it. "copy", or
// an output the device cannot address (pageable memory), keeps the answers in device buffers and
// copies them in one piece after the join, as v17 always did.
#if defined(__CUDACC__)
#define KNN_V17_FN __host__ __device__ __forceinline__
#else
#define KNN_V17_FN inline
#endif

#include <cstddef>
#include <cstdint>
#include <string>

namespace knn::gpu::v17 {

// Direct answers: slot `e` of a query leaf whose packed positions start at `first` (e < the leaf's
// queries × topk; thread t of the block takes e = t, t + threads, ...) is slot e % topk of the row of
// the query at packed position first + e / topk; `index` maps packed positions to rows. Consecutive
// e are consecutive slots of one row. Returns the slot's position in the m × topk output.
KNN_V17_FN std::size_t leaf_slot(const std::int32_t* index, int first, int e, int topk) {
  return std::size_t(index[first + e / topk]) * std::size_t(topk) + std::size_t(e % topk);
}

struct AnswerRoute {
  bool direct = false;
  std::string text;  // what ran, for the path
};

// `wanted`: the parameter's value ("direct" or "copy"); `*_mapped`: whether the output array is
// pinned host memory with a device address.
inline AnswerRoute route_answers(const std::string& wanted, bool indices_mapped, bool distances_mapped) {
  if (wanted == "copy") return {false, "answers copied after the join (answers=copy)"};
  if (indices_mapped && distances_mapped)
    return {true, "answers written by the join kernel into the pinned output, each query leaf's rows as it finishes "
                  "(answers=direct: the copy overlaps the join, phase join_d2h is both)"};
  const std::string which = !indices_mapped && !distances_mapped ? "indices and distances"
                            : !indices_mapped                    ? "indices"
                                                                 : "distances";
  return {false, "answers copied after the join (answers=direct not taken: the output's " + which +
                     " are not pinned memory the device can address)"};
}

}  // namespace knn::gpu::v17

#undef KNN_V17_FN
