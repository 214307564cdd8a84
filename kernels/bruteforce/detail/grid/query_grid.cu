// v15's query grid, the host side (query_grid.hpp): buffers, the copy and search streams, and the path
// line. The kernels and why nothing is lost: query_grid_kernels.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "core/cuda/buffers.hpp"
#include "core/cuda/runtime.hpp"
#include "core/cuda/transfers.hpp"
#include "kernels/bruteforce/detail/grid/query_grid.hpp"
#include "kernels/bruteforce/detail/grid/query_grid_kernels.cuh"
#include "kernels/bruteforce/detail/scan/scan_plan.hpp"
#include "kernels/bruteforce/detail/scan/topk_merge.hpp"

namespace knn::gpu {

using grid::GridArgs, grid::Header, grid::kBuildBlock, grid::kFirstSlices;

std::size_t grid_device_bytes(const Problem& p, const GridPlan& plan) {
  return p.reference_floats() * sizeof(float) + p.query_floats() * sizeof(float) + p.result_slots() * (sizeof(std::int32_t) + sizeof(float)) +
         std::size_t(p.m) * (sizeof(float4) + p.topk * sizeof(unsigned long long)) + std::size_t(plan.cells + 1) * sizeof(int) +
         std::size_t(plan.cells) * 2 * p.dim * sizeof(float) + sizeof(Header) + 2 * sizeof(unsigned long long) + std::size_t(p.m) * sizeof(float) +
         std::size_t(plan.cells) * (sizeof(float) + 3 * p.dim * sizeof(int)) +
         (p.topk > 1 ? PartialMerge::device_bytes(p.m, p.topk) : 0);
}

void grid_search(const Problem& p, const GridPlan& plan, Neighbors out, RunContext& ctx) {
  if (!plan.chosen) throw std::logic_error("grid_search: the plan did not choose the query grid");
  const grid::Kernels k = grid::kernels_for(p.dim);
  cuda::Stream copy, search;
  const int chunks = plan.chunks();
  cuda::StreamBuffer<float> references(p.reference_floats(), copy);
  cuda::StreamBuffer<float> queries(p.query_floats(), copy);
  cuda::StreamBuffer<float4> sorted(p.m, copy);
  cuda::StreamBuffer<int> starts(plan.cells + 1, copy);
  cuda::StreamBuffer<float> boxes(std::size_t(plan.cells) * 2 * p.dim, copy);
  cuda::StreamBuffer<Header> header(1, copy);
  cuda::StreamBuffer<float> bounds(p.m, copy), cell_bounds(plan.cells, copy);
  cuda::StreamBuffer<unsigned> ranges(std::size_t(plan.cells) * p.dim, copy);
  cuda::StreamBuffer<int> widened(std::size_t(plan.cells) * 2 * p.dim, copy);
  cuda::StreamBuffer<unsigned long long> best(p.result_slots(), copy);
  cuda::StreamBuffer<unsigned long long> counted(2, copy);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), copy);
  cuda::StreamBuffer<float> distances(p.result_slots(), copy);
  std::unique_ptr<PartialMerge> merger;
  if (p.topk > 1) merger = std::make_unique<PartialMerge>(p.m, p.topk, p.topk, copy, false);
  // Destroyed before the buffers: on an exception, the search's kernels end before the copy stream frees what they read.
  const cuda::JoinOnUnwind join(search), join_copy(copy);

  GridArgs a{};
  a.queries = queries.data(), a.references = references.data();
  a.m = p.m, a.topk = p.topk, a.side = plan.side, a.cells = plan.cells;
  a.sorted = sorted.data(), a.starts = starts.data(), a.boxes = boxes.data(), a.header = header.data();
  a.best = best.data(), a.exact = counted.data();
  a.bounds = bounds.data(), a.cell_bounds = cell_bounds.data(), a.reach = ranges.data(), a.widened = widened.data();

  cuda::Event start, queries_in, search_start, searched, merged, done;
  std::vector<cuda::Event> copied(chunks);
  start.record(copy);
  KNN_CUDA_TRY(cudaStreamWaitEvent(search, start.get(), 0));
  fill_worst_keys(best.data(), (long long)p.result_slots(), search);
  KNN_CUDA_TRY(cudaMemsetAsync(counted.data(), 0, 2 * sizeof(unsigned long long), search));
  KNN_CUDA_TRY(cudaMemcpyAsync(queries.data(), p.queries, p.query_floats() * sizeof(float), cudaMemcpyHostToDevice, copy));
  queries_in.record(copy);
  for (int c = 0; c < chunks; ++c) {
    const std::size_t first = std::size_t(plan.chunk_rows[c]) * p.dim;
    const std::size_t floats = std::size_t(plan.chunk_rows[c + 1] - plan.chunk_rows[c]) * p.dim;
    KNN_CUDA_TRY(cudaMemcpyAsync(references.data() + first, p.references + first, floats * sizeof(float), cudaMemcpyHostToDevice, copy));
    copied[c].record(copy);
  }
  KNN_CUDA_TRY(cudaStreamWaitEvent(search, queries_in.get(), 0));
  k.build<<<1, kBuildBlock, 0, search>>>(a);
  KNN_CUDA_CHECK_LAUNCH();
  for (int c = 0; c < chunks; ++c) {
    KNN_CUDA_TRY(cudaStreamWaitEvent(search, copied[c].get(), 0));
    if (c == 0) search_start.record(search);
    a.row_begin = plan.chunk_rows[c], a.row_end = plan.chunk_rows[c + 1];
    if (c == 0) {  // every row of the first chunk against every query; topk 1 has its answer there
      k.first<<<int(((long long)p.m * 32 * kFirstSlices + kGridBlock - 1) / kGridBlock), kGridBlock, 0, search>>>(a);
      KNN_CUDA_CHECK_LAUNCH();
      if (p.topk == 1) continue;
    }
    k.reach<<<1, kBuildBlock, 0, search>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
    k.range<<<(plan.cells * 32 + kGridBlock - 1) / kGridBlock, kGridBlock, 0, search>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
    const long long per_block = (long long)kGridBlock * kGridRowsPerThread;
    k.search<<<int((a.row_end - a.row_begin + per_block - 1) / per_block), kGridBlock, 0, search>>>(a);
    KNN_CUDA_CHECK_LAUNCH();
  }
  searched.record(search);
  KNN_CUDA_TRY(cudaStreamWaitEvent(copy, searched.get(), 0));
  if (merger)
    merger->enqueue_keys(best.data(), indices.data(), distances.data());
  else
    unpack_best(best.data(), p.m, indices.data(), distances.data(), copy);
  merged.record(copy);
  cuda::download_answers(p, indices.data(), distances.data(), out, copy);
  done.record(copy);
  unsigned long long counts[2] = {0, 0};  // after the last timed event: no part of the answer
  KNN_CUDA_TRY(cudaMemcpyAsync(counts, counted.data(), sizeof counts, cudaMemcpyDeviceToHost, copy));
  copy.synchronize();
  const unsigned long long exact_count = counts[0];
  const long long searched_rows = p.n - (p.topk == 1 ? plan.chunk_rows[1] : 0);

  report_chunk_phases(ctx.timing, start, copied[chunks - 1], search_start, searched, merged, done);
  ctx.path = fmt::format(
      "query grid: k={} compiled in, the queries sorted into {} cell{} ({} per dimension) of their bounding box; a row tests the "
      "cells in the range its cell holds of the cells whose box widened by their largest bound's reach (found per chunk) meets it, "
      "and the queries of a cell whose box lies within that bound: {:.1f} cells tested per row searched; {} exact fp32 distances ({:.1f} per query, {:.4f} % of the pairs), besides every query against the {} rows of the first chunk{}; blocks of {} threads x {} rows; {}; {}",
      p.dim, plan.cells, plan.cells == 1 ? "" : "s", plan.side, double(counts[1]) / double(std::max(1LL, searched_rows)), exact_count, double(exact_count) / p.m,
      100.0 * double(exact_count) / (double(p.m) * p.n), plan.chunk_rows[1], p.topk == 1 ? " (its answer: the grid starts at the second)" : "",
      kGridBlock, kGridRowsPerThread,
      chunks_text(plan.chunk_rows, p.dim, true), filter_lists_text(p.topk));
}

}  // namespace knn::gpu
