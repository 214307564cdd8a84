// v15's exact integer path on the GPU (the rules and the plan: exact_int8_plan.cpp): the float
// inputs are copied as they are, turned into shifted int8 rows padded to 16 columns, their squared
// norms summed in int32, and then, a chunk of queries at a time, cuBLAS's int8 GEMM writes every
// dot product q·r (int32) and one block per query selects its topk smallest exact distances
// ‖q‖² + ‖r‖² − 2 q·r from them. With reference chunks (v15.int8_chunks) the references are copied
// chunk by chunk and each chunk is searched as it lands (search_pipelined).
#include "core/cuda/cublas.hpp"
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda/runtime.hpp"
#include "kernels/bruteforce/detail/int8/block_select.cuh"
#include "kernels/bruteforce/detail/int8/exact_int8.hpp"
#include "kernels/device/warp_reduce.cuh"

namespace knn::gpu {
namespace {

namespace cuda = knn::cuda;

void cublas_try(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("v15 int8 path: {} failed: {}", what, knn::cuda::blas::api().status_string(s)));
}

// One cuBLAS handle per device for the process's life (creating one costs milliseconds and loads
// kernels; like the stream pool, they are never destroyed, so nothing runs after the driver shut down).
cublasHandle_t handle_for_current_device() {
  static std::mutex mutex;
  static auto* handles = new std::map<int, cublasHandle_t>;
  const int device = cuda::HandlePool::current_device();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles->find(device);
  if (it != handles->end()) return it->second;
  cublasHandle_t h = nullptr;
  cublas_try(knn::cuda::blas::require("v15 int8 path").create(&h), "cublasCreate");
  handles->emplace(device, h);
  return h;
}

// rows × dim floats → padded_rows × padded_dim int8 (value − shift; zero columns and zero rows
// beyond the data).
__global__ void to_int8(const float* __restrict__ in, int rows, int dim, int padded_rows, int padded_dim, float shift,
                        std::int8_t* __restrict__ out) {
  const std::size_t total = std::size_t(padded_rows) * padded_dim;
  for (std::size_t e = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; e < total; e += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t r = e / padded_dim;
    const int c = int(e - r * padded_dim);
    out[e] = r < std::size_t(rows) && c < dim ? static_cast<std::int8_t>(static_cast<int>(in[r * dim + c] - shift)) : 0;
  }
}

// A warp per row: Σ v² in int32 (at most 32768 · 2^14 = 2^29).
__global__ void squared_norms(const std::int8_t* __restrict__ x, int rows, int padded_dim, std::int32_t* __restrict__ out) {
  const int warp = int((blockIdx.x * std::size_t(blockDim.x) + threadIdx.x) >> 5), lane = threadIdx.x & 31;
  if (warp >= rows) return;
  const std::int8_t* row = x + std::size_t(warp) * padded_dim;
  int sum = 0;
  for (int c = lane; c < padded_dim; c += 32) sum += int(row[c]) * int(row[c]);
  sum = knn::gpu::warp::sum(sum);
  if (lane == 0) out[warp] = sum;
}

// Block b answers query first + b from its row of dot products with the chunk of references that
// starts at row `row_first` (dots[b · stride + j], j < rows; candidate j is reference row_first + j).
// `carried`: the query's kept keys from the chunks before (nullptr: none); `keys_out`: where its
// keys go for the chunks after (nullptr: the last chunk, the answers are written). A thread reads its
// dot products and the rows' norms 4 at a time (16-byte loads: the row starts on a multiple of 4
// entries, row_first is a multiple of kInt8ChunkAlign, and both arrays hold `rows` rounded up to 4).
__global__ __launch_bounds__(select::kSelectThreads) void select_from_dots(
    const std::int32_t* __restrict__ dots, int stride, const std::int32_t* __restrict__ ref_norms,
    const std::int32_t* __restrict__ query_norms, int row_first, int rows, int first, int topk, bool self_join,
    const unsigned long long* carried, unsigned long long* keys_out, std::int32_t* indices, float* distances) {
  static_assert(select::kSelectItems % 4 == 0, "items are read 4 at a time");
  const int q = first + int(blockIdx.x);
  const std::int32_t* row = dots + std::size_t(blockIdx.x) * stride;
  const auto qn = static_cast<std::uint32_t>(query_norms[q]);
  const auto tile_keys = [&](int base, unsigned long long (&keys)[select::kSelectItems], bool (&takes)[select::kSelectItems]) {
#pragma unroll
    for (int v = 0; v < select::kSelectItems / 4; ++v) {
      const int j0 = base + (v * select::kSelectThreads + int(threadIdx.x)) * 4;
      int4 dot = make_int4(0, 0, 0, 0), norm = dot;
      if (j0 < rows) {
        dot = *reinterpret_cast<const int4*>(row + j0);
        norm = *reinterpret_cast<const int4*>(ref_norms + row_first + j0);
      }
      const int dots4[4] = {dot.x, dot.y, dot.z, dot.w}, norms4[4] = {norm.x, norm.y, norm.z, norm.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int j = j0 + e, r = row_first + j;
        // Exact modulo 2^32, and 0 ≤ d ≤ k · 255² < 2^31.
        const std::uint32_t d = qn + static_cast<std::uint32_t>(norms4[e]) - 2u * static_cast<std::uint32_t>(dots4[e]);
        keys[v * 4 + e] = select::pack(d, r);
        takes[v * 4 + e] = j < rows && !(self_join && r == q);
      }
    }
  };
  const std::size_t at = std::size_t(q) * topk;
  select::select_row(rows, topk, tile_keys, carried != nullptr ? carried + at : nullptr, keys_out != nullptr ? keys_out + at : nullptr,
                     indices + at, distances + at);
}

// Blocks for one thread per item (squared_norms: a warp per row); grid-stride kernels pass a cap.
int grid_for(std::size_t threads_wanted, int block, std::size_t cap = std::size_t(1) << 30) {
  return int(std::min((threads_wanted + block - 1) / block, cap));
}
constexpr std::size_t kConvertBlocks = std::size_t(1) << 16;  // to_int8 strides over the rest

// `rows` float rows → `padded_rows` int8 rows (zero rows beyond `rows`) and their squared norms.
void convert(const float* in, int rows, int padded_rows, int dim, const Int8Plan& plan, std::int8_t* out, std::int32_t* norms,
             cudaStream_t stream) {
  constexpr int kBlock = 256;
  const int pd = plan.padded_dim;
  to_int8<<<grid_for(std::size_t(padded_rows) * pd, kBlock, kConvertBlocks), kBlock, 0, stream>>>(in, rows, dim, padded_rows, pd,
                                                                                                   plan.shift, out);
  KNN_CUDA_CHECK_LAUNCH();
  squared_norms<<<grid_for(std::size_t(padded_rows) * 32, kBlock), kBlock, 0, stream>>>(out, padded_rows, pd, norms);
  KNN_CUDA_CHECK_LAUNCH();
}

// dots (rows × count, column-major, leading dimension ldc) = references8ᵀ (rows × pd) · queries8
// (pd × count): both operands are row-major int8 rows, which is cuBLAS's column-major "T, N" layout.
void gemm(cublasHandle_t blas, int rows, int count, int pd, const std::int8_t* references8, const std::int8_t* queries8,
          std::int32_t* dots, int ldc) {
  const std::int32_t alpha = 1, beta = 0;
  cublas_try(knn::cuda::blas::api().gemm_ex(blas, CUBLAS_OP_T, CUBLAS_OP_N, rows, count, pd, &alpha, references8, CUDA_R_8I, pd, queries8,
                          CUDA_R_8I, pd, &beta, dots, CUDA_R_32I, ldc, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx (int8, int32 accumulate)");
}

std::string path_head(const Problem& p, const Int8Plan& plan) {
  return fmt::format(
      "exact integer path: whole values in [{:g}, {:g}] shifted by {:g} into int8, k = {} padded to {}; int8 GEMM "
      "with int32 accumulation (cuBLAS, tensor cores; no rounding)",
      p.values.lowest, p.values.highest, plan.shift, p.dim, plan.padded_dim);
}

// One chunk: the whole copy, then convert, GEMM and select on one stream, timed phase by phase.
void search_serial(const Problem& p, const Int8Plan& plan, Neighbors out, RunContext& ctx, cublasHandle_t blas) {
  const int pd = plan.padded_dim, pn = plan.padded_n;
  cuda::Stream stream;
  cublas_try(knn::cuda::blas::api().set_stream(blas, stream), "cublasSetStream");
  cuda::PhaseTimer timer(stream);

  cuda::StreamBuffer<float> references(p.reference_floats(), stream);
  cuda::StreamBuffer<float> own_queries(p.self_join ? 0 : p.query_floats(), stream);
  cuda::StreamBuffer<std::int8_t> references8(std::size_t(pn) * pd, stream);
  cuda::StreamBuffer<std::int8_t> own_queries8(p.self_join ? 0 : std::size_t(p.m) * pd, stream);
  cuda::StreamBuffer<std::int32_t> ref_norms(pn, stream);
  cuda::StreamBuffer<std::int32_t> own_query_norms(p.self_join ? 0 : p.m, stream);
  cuda::StreamBuffer<std::int32_t> dots(std::size_t(plan.query_chunk) * pn, stream);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), stream);
  cuda::StreamBuffer<float> distances(p.result_slots(), stream);

  timer.begin("h2d");
  cuda::upload_inputs(p, references.data(), own_queries.data(), stream);
  timer.end();

  timer.begin("convert");
  convert(references.data(), p.n, pn, p.dim, plan, references8.data(), ref_norms.data(), stream);
  if (!p.self_join) convert(own_queries.data(), p.m, p.m, p.dim, plan, own_queries8.data(), own_query_norms.data(), stream);
  timer.end();
  const std::int8_t* queries8 = p.self_join ? references8.data() : own_queries8.data();
  const std::int32_t* query_norms = p.self_join ? ref_norms.data() : own_query_norms.data();

  const std::size_t shared = select::shared_bytes(p.topk);
  int rounds = 0;
  for (int first = 0; first < p.m; first += plan.query_chunk, ++rounds) {
    const int count = std::min(plan.query_chunk, p.m - first);
    timer.begin("gemm");
    gemm(blas, pn, count, pd, references8.data(), queries8 + std::size_t(first) * pd, dots.data(), pn);
    timer.end();
    timer.begin("select");
    select_from_dots<<<count, select::kSelectThreads, shared, stream>>>(dots.data(), pn, ref_norms.data(), query_norms, 0, p.n,
                                                                       first, p.topk, p.self_join, nullptr, nullptr,
                                                                       indices.data(), distances.data());
    KNN_CUDA_CHECK_LAUNCH();
    timer.end();
  }

  cuda::finish_with_answers(timer, p, indices.data(), distances.data(), out, stream, ctx.timing);
  ctx.path = path_head(p, plan) + fmt::format(
      " for {} query chunk{} of up to {}, then a block per query selects the top {} of its row; references in 1 chunk "
      "({}), copied before the search (no overlap)",
      rounds, rounds == 1 ? "" : "s", plan.query_chunk, p.topk, plan.chunks_why);
}

// Several chunks (never a self-join): the queries are copied first, then the references chunk by
// chunk on the copy stream. The compute stream converts each chunk as it lands and runs the GEMM
// of every query round against it into one of two dot buffers; the select stream selects from one
// buffer while the GEMM fills the other, each query's kept keys carried from chunk to chunk in
// `keys` (the last chunk writes the answers). Events order it: copied[c] before chunk c's convert,
// gemmed[b] before the selection of buffer b, selected[b] before the GEMM that writes b again.
void search_pipelined(const Problem& p, const Int8Plan& plan, Neighbors out, RunContext& ctx, cublasHandle_t blas) {
  const int pd = plan.padded_dim, pn = plan.padded_n, chunks = plan.chunks(), stride = plan.chunk_stride;
  cuda::Stream copy, compute, selector;
  cublas_try(knn::cuda::blas::api().set_stream(blas, compute), "cublasSetStream");
  cuda::StreamBuffer<float> references(p.reference_floats(), copy);
  cuda::StreamBuffer<float> queries(p.query_floats(), copy);
  cuda::StreamBuffer<std::int8_t> references8(std::size_t(pn) * pd, copy);
  cuda::StreamBuffer<std::int8_t> queries8(std::size_t(p.m) * pd, copy);
  cuda::StreamBuffer<std::int32_t> ref_norms(pn, copy);
  cuda::StreamBuffer<std::int32_t> query_norms(p.m, copy);
  const std::size_t buffer_slots = std::size_t(plan.query_chunk) * stride;
  cuda::StreamBuffer<std::int32_t> dots(2 * buffer_slots, copy);
  cuda::StreamBuffer<unsigned long long> keys(p.result_slots(), copy);
  cuda::StreamBuffer<std::int32_t> indices(p.result_slots(), copy);
  cuda::StreamBuffer<float> distances(p.result_slots(), copy);

  // Destroyed before the buffers (declared after them): on an exception, the GEMMs and selections
  // already queued on the other two streams finish before the copy stream frees what they read.
  struct JoinStreams {
    cudaStream_t a, b;
    ~JoinStreams() { (void)cudaStreamSynchronize(a), (void)cudaStreamSynchronize(b); }
  } join{compute, selector};
  cuda::Event start, queries_copied, searched, done;
  std::vector<cuda::Event> copied(chunks);
  cuda::Event gemmed[2], selected[2];
  start.record(copy);  // after the allocations, which the copy stream orders
  KNN_CUDA_TRY(cudaMemcpyAsync(queries.data(), p.queries, p.query_floats() * sizeof(float), cudaMemcpyHostToDevice, copy));
  queries_copied.record(copy);
  for (int c = 0; c < chunks; ++c) {
    const std::size_t first = std::size_t(plan.chunk_rows[c]) * p.dim;
    const std::size_t floats = std::size_t(plan.chunk_rows[c + 1] - plan.chunk_rows[c]) * p.dim;
    KNN_CUDA_TRY(cudaMemcpyAsync(references.data() + first, p.references + first, floats * sizeof(float), cudaMemcpyHostToDevice,
                                 copy));
    copied[c].record(copy);
  }
  KNN_CUDA_TRY(cudaStreamWaitEvent(compute, queries_copied.get(), 0));
  KNN_CUDA_TRY(cudaStreamWaitEvent(selector, start.get(), 0));
  convert(queries.data(), p.m, p.m, p.dim, plan, queries8.data(), query_norms.data(), compute);
  const std::size_t shared = select::shared_bytes(p.topk);
  int step = 0;
  for (int c = 0; c < chunks; ++c) {
    // Chunk boundaries are multiples of kInt8ChunkAlign: only the last chunk's rows are padded (to
    // 4, with zero rows, inside padded_n).
    const int row_first = plan.chunk_rows[c], rows = plan.chunk_rows[c + 1] - row_first, padded = (rows + 3) / 4 * 4;
    std::int8_t* chunk8 = references8.data() + std::size_t(row_first) * pd;
    KNN_CUDA_TRY(cudaStreamWaitEvent(compute, copied[c].get(), 0));
    convert(references.data() + std::size_t(row_first) * p.dim, rows, padded, p.dim, plan, chunk8, ref_norms.data() + row_first,
            compute);
    for (int first = 0; first < p.m; first += plan.query_chunk, ++step) {
      const int count = std::min(plan.query_chunk, p.m - first), b = step % 2;
      std::int32_t* buffer = dots.data() + b * buffer_slots;
      if (step >= 2) KNN_CUDA_TRY(cudaStreamWaitEvent(compute, selected[b].get(), 0));  // step − 2 has read it
      gemm(blas, padded, count, pd, chunk8, queries8.data() + std::size_t(first) * pd, buffer, stride);
      gemmed[b].record(compute);
      KNN_CUDA_TRY(cudaStreamWaitEvent(selector, gemmed[b].get(), 0));
      select_from_dots<<<count, select::kSelectThreads, shared, selector>>>(
          buffer, stride, ref_norms.data(), query_norms.data(), row_first, rows, first, p.topk, false,
          c == 0 ? nullptr : keys.data(), c == chunks - 1 ? nullptr : keys.data(), indices.data(), distances.data());
      KNN_CUDA_CHECK_LAUNCH();
      selected[b].record(selector);
    }
  }
  searched.record(selector);  // after every selection, which came after every GEMM and convert
  KNN_CUDA_TRY(cudaStreamWaitEvent(copy, searched.get(), 0));
  cuda::download_answers(p, indices.data(), distances.data(), out, copy);
  done.record(copy);
  copy.synchronize();

  // Phases that do not overlap: the queries' copy alone, then the search (the references' copy
  // with the convert, GEMM and selection under it), then the answers' download.
  const auto span = cuda::elapsed_ms;
  ctx.timing.add("h2d", span(start, queries_copied));
  ctx.timing.add("search", span(queries_copied, searched));
  ctx.timing.add("d2h", span(searched, done));
  const int rounds = (p.m + plan.query_chunk - 1) / plan.query_chunk;
  ctx.path = path_head(p, plan) + fmt::format(
      "; references in {} chunks of up to {} rows ({}), copied after the queries, each converted, multiplied and selected "
      "as it lands while the next is copied (copy overlapped); {} query round{} of up to {} per chunk, GEMM and selection "
      "on two streams with two dot buffers, a block per query keeping its top {} from chunk to chunk",
      chunks, stride, plan.chunks_why, rounds, rounds == 1 ? "" : "s", plan.query_chunk, p.topk);
}

}  // namespace

void int8_search(const Problem& p, const Int8Plan& plan, Neighbors out, RunContext& ctx) {
  if (!plan.chosen) throw std::logic_error("int8_search: the plan did not choose the int8 path");
  if (p.self_join && plan.pipelined()) throw std::logic_error("int8_search: a self-join is searched in one chunk");
  cublasHandle_t blas = handle_for_current_device();
  KNN_CUDA_TRY(cudaFuncSetAttribute(select_from_dots, cudaFuncAttributeMaxDynamicSharedMemorySize, int(select::shared_bytes(p.topk))));
  if (!plan.pipelined()) return search_serial(p, plan, out, ctx, blas);
  search_pipelined(p, plan, out, ctx, blas);
}

}  // namespace knn::gpu
