// p-torch, p-torch-direct, p-torch-cpu: PyTorch's exact-kNN recipes through libtorch, as peers.
//   p-torch         the GEMM identity ‖q‖² + ‖r‖² − 2 q·r (addmm onto the norms: what torch.cdist
//                   does with compute_mode "use_mm_for_euclid_dist"), then topk;
//   p-torch-direct  torch.cdist with "donot_use_mm_for_euclid_dist" (no matrix product), squared, topk;
//   p-torch-cpu     p-torch's recipe on the CPU always, with the run's OpenMP threads.
// p-torch and p-torch-direct run on the first selected GPU when libtorch has CUDA and the run has a
// device, else on the CPU. The distance block is chunked over queries and references to fit a budget
// (1 GiB on a GPU, at most 3/4 of its free memory; 256 MiB on the CPU; the parameter block_kib sets it);
// each reference chunk's topk is merged into the query chunk's lists (topk of the concatenation).
// Self-joins: topk + 1 searched, the point itself dropped. docs/peers-torch.md.
// Two builds of this file (cmake/torch.cmake): the programs get the registration, without torch's
// headers; with KNN_TORCH_MODULE the libtorch half becomes a module that the registration loads on
// first use, since a program linking libtorch pays its start-up (seconds with Debian's) on every run.
// Without libtorch the three register and skip with the reason and how to get it.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/registry.hpp"
#include "core/topk.hpp"
#include "kernels/device/tree_threads.hpp"
#include "kernels/peers/peers.hpp"

#ifndef KNN_HAVE_TORCH  // cmake/torch.cmake sets these: built with libtorch, with CUDA, the module
#define KNN_HAVE_TORCH 0
#endif
#ifndef KNN_HAVE_TORCH_CUDA
#define KNN_HAVE_TORCH_CUDA 0
#endif
#ifndef KNN_TORCH_MODULE
#define KNN_TORCH_MODULE 0
#endif
#if KNN_TORCH_MODULE
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/cuda.h>
#include <torch/version.h>
#if KNN_HAVE_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif
#elif KNN_HAVE_TORCH
#include <dlfcn.h>
#endif

namespace {

constexpr const char* kLibrary = "PyTorch";
constexpr const char* kInstall =
    "apt-get install libtorch-dev for the CPU build, or pip install torch and configure with "
    "-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')";

enum class Recipe { gemm, direct };
struct Variant {
  const char* id;
  Recipe recipe;
  bool gpu_allowed;  // on the first selected GPU when there is one
  const char* what;
};
constexpr Variant kVariants[] = {
    {"p-torch", Recipe::gemm, true, "addmm ||q||^2 + ||r||^2 - 2 q.r (cdist's use_mm), topk"},
    {"p-torch-direct", Recipe::direct, true, "cdist donot_use_mm_for_euclid_dist, squared, topk"},
    {"p-torch-cpu", Recipe::gemm, false, "addmm ||q||^2 + ||r||^2 - 2 q.r (cdist's use_mm), topk"},
};

// The chunking. A block element holds its distance (4 bytes) and room for a sort's values and int64
// indices (12): torch's topk may sort whole rows. Each query of a chunk holds its running list, the
// chunk's list, their concatenation and the merged list, values and int64 indices: 60 bytes a slot.
constexpr std::size_t kBytesPerBlockElement = 16;
constexpr std::size_t kBytesPerListSlot = 60;
constexpr std::size_t kGpuBudget = std::size_t(1) << 30;
constexpr std::size_t kCpuBudget = std::size_t(256) << 20;
constexpr std::size_t kDeviceSlack = std::size_t(64) << 20;  // cuBLAS workspace, the allocator's rounding
constexpr int kQueryRowsLeast = 32;  // references are split when fewer queries of whole rows fit,
constexpr int kQueryRowsWanted = 64;  // into chunks that this many fit
constexpr int kMinReferenceRows = 16;

// The block budget (bytes): the parameter block_kib (`kib`) when not 0, else by where the block is.
std::size_t budget(long kib, bool gpu) {
  if (kib > 0) return std::size_t(kib) << 10;
  return gpu ? kGpuBudget : kCpuBudget;
}

struct Plan {
  int searched = 0;  // list length: min(topk, n)
  int query_rows = 0, reference_rows = 0;
  int query_chunks = 0, reference_chunks = 0;
  std::size_t bytes = 0;  // the block and the lists of one query chunk
};

Plan plan(const knn::Problem& p, std::size_t budget) {
  Plan pl;
  pl.searched = std::min(p.topk, p.n);
  const std::size_t lists = std::size_t(pl.searched) * kBytesPerListSlot;
  std::size_t refs = std::size_t(p.n);
  if (budget / (refs * kBytesPerBlockElement + lists) < std::size_t(std::min(p.m, kQueryRowsLeast))) {
    // Equal reference chunks, each sized for kQueryRowsWanted queries.
    const std::size_t per_row = budget / std::size_t(std::min(p.m, kQueryRowsWanted));
    const std::size_t most = std::max<std::size_t>(per_row > lists ? (per_row - lists) / kBytesPerBlockElement : 0, kMinReferenceRows);
    const std::size_t chunks = (refs + most - 1) / most;
    refs = (refs + chunks - 1) / chunks;
  }
  pl.reference_rows = int(refs);
  const std::size_t row_bytes = refs * kBytesPerBlockElement + lists;
  pl.query_rows = int(std::clamp<std::size_t>(budget / row_bytes, 1, std::size_t(p.m)));
  pl.query_chunks = (p.m + pl.query_rows - 1) / pl.query_rows;
  pl.reference_chunks = (p.n + pl.reference_rows - 1) / pl.reference_rows;
  pl.bytes = std::size_t(pl.query_rows) * row_bytes;
  return pl;
}

// Device memory besides the block: the inputs, their norms, the answers (float and int32 lists).
std::size_t device_fixed_bytes(const knn::Problem& p) {
  const bool shared = p.queries == p.references;
  const std::size_t points = std::size_t(p.n) + (shared ? 0 : std::size_t(p.m));
  return 4 * points * std::size_t(p.dim) + 4 * points + 8 * std::size_t(p.m) * std::size_t(std::min(p.topk, p.n)) + kDeviceSlack;
}

knn::Problem searched_problem(const knn::Problem& p) { return p.self_join ? knn::widened_for_self_join(p) : p; }

std::string gib(std::size_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / double(std::size_t(1) << 30)); }

#if KNN_TORCH_MODULE
constexpr const char* kVersion = "libtorch " TORCH_VERSION;

bool torch_has_gpu() {
#if KNN_HAVE_TORCH_CUDA
  static const bool available = torch::cuda::is_available();
  return available;
#else
  return false;
#endif
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// libtorch's first CPU operation sets the calling thread's OpenMP thread count to its own default,
// and at::set_num_threads sets it too (and rebuilds libtorch's thread pool: milliseconds). The
// harness's setting is put back after every call; libtorch's count is set only when it differs.
struct OmpRestore {
  const int before = omp_get_max_threads();
  ~OmpRestore() { omp_set_num_threads(before); }
};

// One block of squared distances: queries q (rows) against references r (columns).
at::Tensor block_distances(Recipe recipe, const at::Tensor& q, const at::Tensor& q_norms, const at::Tensor& r,
                           const at::Tensor& r_norms) {
  if (recipe == Recipe::gemm) {
    at::Tensor d = at::addmm(r_norms.unsqueeze(0), q, r.t(), /*beta=*/1, /*alpha=*/-2);
    return d.add_(q_norms.unsqueeze(1)).clamp_min_(0);  // rounding can take a distance below zero
  }
  at::Tensor d = at::cdist(q, r, 2.0, /*compute_mode donot_use_mm_for_euclid_dist=*/2);
  return d.mul_(d);
}

// Answers p (never a self-join here) into out: rows sorted by torch's distances, ties in torch's order.
std::string torch_search(const Variant& v, long block_kib, const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  c10::InferenceMode inference;
  const bool gpu = v.gpu_allowed && !ctx.env.devices.empty() && torch_has_gpu();
  const bool shared = p.queries == p.references && p.m == p.n;  // a widened self-join: one upload
  const auto host = at::TensorOptions().dtype(at::kFloat);
  at::Tensor queries = at::from_blob(const_cast<float*>(p.queries), {p.m, p.dim}, host);
  at::Tensor references = shared ? queries : at::from_blob(const_cast<float*>(p.references), {p.n, p.dim}, host);
  at::Tensor out_d = at::from_blob(out.distances, {p.m, p.topk}, host);
  at::Tensor out_i = at::from_blob(out.indices, {p.m, p.topk}, at::TensorOptions().dtype(at::kInt));
  std::size_t block_budget = budget(block_kib, gpu);
  std::string where;
  const int searched = std::min(p.topk, p.n);
  if (searched < p.topk) {  // fewer references than topk: the empty slots v0 leaves
    out_d.narrow(1, searched, p.topk - searched).fill_(std::numeric_limits<float>::infinity());
    out_i.narrow(1, searched, p.topk - searched).fill_(-1);
  }
  at::Tensor res_d = out_d.narrow(1, 0, searched), res_i = out_i.narrow(1, 0, searched);
  auto t = std::chrono::steady_clock::now();
#if KNN_HAVE_TORCH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  const int ordinal = gpu ? ctx.env.devices.front().ordinal : -1;
  if (gpu) {
    guard.emplace(c10::DeviceIndex(ordinal));
    ctx.devices_used = {ordinal};
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) throw std::runtime_error("p-torch: cudaMemGetInfo failed");
    const std::size_t fixed = device_fixed_bytes(p);
    const std::size_t least = plan(p, 1).bytes;  // one query row's block and lists
    if (free < fixed + least)
      throw knn::OutOfMemoryError(fmt::format("needs {}, device {} has {} free", gib(fixed + least), ordinal, gib(free)));
    block_budget = std::min(block_budget, (free - fixed) / 4 * 3);
    const at::Device device(at::kCUDA, c10::DeviceIndex(ordinal));
    queries = queries.to(device);
    references = shared ? queries : references.to(device);
    torch::cuda::synchronize(ordinal);
    ctx.timing.add("h2d", ms_since(t));
    t = std::chrono::steady_clock::now();
    res_d = at::empty({p.m, searched}, at::TensorOptions().dtype(at::kFloat).device(device));
    res_i = at::empty({p.m, searched}, at::TensorOptions().dtype(at::kInt).device(device));
    where = fmt::format("GPU {} ({})", ordinal, ctx.env.devices.front().name);
  }
#endif
  if (!gpu) {
    const int n_threads = knn::tree::tree_threads(ctx.env);
    if (at::get_num_threads() != n_threads) at::set_num_threads(n_threads);
    where = fmt::format("CPU, {} threads{}", n_threads,
                        v.gpu_allowed && !ctx.env.devices.empty() ? " (libtorch without CUDA)" : "");
  }
  const Plan pl = plan(p, block_budget);
  at::Tensor q_norms, r_norms;
  if (v.recipe == Recipe::gemm) {
    q_norms = queries.pow(2).sum(1);
    r_norms = shared ? q_norms : references.pow(2).sum(1);
  }
  for (int qb = 0; qb < p.m; qb += pl.query_rows) {
    const int qc = std::min(pl.query_rows, p.m - qb);
    const at::Tensor q = queries.narrow(0, qb, qc);
    const at::Tensor qn = q_norms.defined() ? q_norms.narrow(0, qb, qc) : q_norms;
    at::Tensor best_d, best_i;  // the running lists of this query chunk
    for (int rb = 0; rb < p.n; rb += pl.reference_rows) {
      const int rc = std::min(pl.reference_rows, p.n - rb);
      at::Tensor chunk_d, chunk_i;
      {
        const at::Tensor block = block_distances(v.recipe, q, qn, references.narrow(0, rb, rc),
                                                 r_norms.defined() ? r_norms.narrow(0, rb, rc) : r_norms);
        std::tie(chunk_d, chunk_i) = at::topk(block, std::min(searched, rc), 1, /*largest=*/false, /*sorted=*/true);
      }  // the block is freed before the merge
      chunk_i.add_(rb);
      if (!best_d.defined()) {
        best_d = chunk_d;
        best_i = chunk_i;
        continue;
      }
      const at::Tensor both_d = at::cat({best_d, chunk_d}, 1), both_i = at::cat({best_i, chunk_i}, 1);
      at::Tensor at_pos;
      std::tie(best_d, at_pos) = at::topk(both_d, std::min<std::int64_t>(searched, both_d.size(1)), 1, false, true);
      best_i = both_i.gather(1, at_pos);
    }
    res_d.narrow(0, qb, qc).copy_(best_d);
    res_i.narrow(0, qb, qc).copy_(best_i);
  }
#if KNN_HAVE_TORCH_CUDA
  if (gpu) {
    torch::cuda::synchronize(ordinal);
    ctx.timing.add("kernel", ms_since(t));
    t = std::chrono::steady_clock::now();
    out_d.narrow(1, 0, searched).copy_(res_d);
    out_i.narrow(1, 0, searched).copy_(res_i);
    ctx.timing.add("d2h", ms_since(t));
  }
#endif
  return fmt::format("{}: {}; {}{}; {} query chunk{} of <= {} x {} reference chunk{} of <= {} (block budget {:.2f} MiB)", where, v.what,
                     kVersion, KNN_HAVE_TORCH_CUDA ? " (CUDA)" : " (CPU)", pl.query_chunks, pl.query_chunks == 1 ? "" : "s",
                     pl.query_rows, pl.reference_chunks, pl.reference_chunks == 1 ? "" : "s", pl.reference_rows, double(block_budget) / double(1 << 20));
}

// Releases the blocks libtorch's caching allocator keeps, so that what runs next sees the free memory.
struct ReleaseCache {
  ~ReleaseCache() {
#if KNN_HAVE_TORCH_CUDA
    if (torch_has_gpu()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
  }
};

void torch_query(const Variant& v, long block_kib, const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const OmpRestore omp;
  const ReleaseCache release;
  try {
    if (!p.self_join) {
      ctx.path = torch_search(v, block_kib, p, out, ctx);
      knn::peers::order_ties(p, out);
      return;
    }
    const knn::Problem wide = knn::widened_for_self_join(p);
    std::vector<std::int32_t> indices(wide.result_slots());
    std::vector<float> distances(wide.result_slots());
    const knn::Neighbors wide_out{indices.data(), distances.data()};
    ctx.path = torch_search(v, block_kib, wide, wide_out, ctx) + "; self-join: topk + 1 searched, the point itself dropped";
    knn::peers::order_ties(wide, wide_out);
    knn::drop_self(p, indices.data(), distances.data(), out);
  } catch (const c10::OutOfMemoryError& e) {
    if (ctx.devices_used.empty()) throw std::bad_alloc();
    throw knn::OutOfMemoryError(fmt::format("out of memory on device {} in libtorch: {}", ctx.devices_used.front(),
                                            e.what_without_backtrace()));
  } catch (const c10::Error& e) {  // the message without libtorch's backtrace
    throw std::runtime_error(std::string("libtorch: ") + e.what_without_backtrace());
  }
}
}  // namespace

// The module's one entry point: variant V of kVariants on p with the block_kib parameter's value, as a
// version's query() (exceptions as the harness knows them: knn::OutOfMemoryError, std::bad_alloc,
// std::runtime_error). The registration reads the parameter: the module links none of knn_core.
extern "C" __attribute__((visibility("default"))) void knn_torch_query(int variant, long block_kib, const knn::Problem* p,
                                                                      knn::Neighbors out, knn::RunContext* ctx) {
  torch_query(kVariants[variant], block_kib, *p, out, *ctx);
}
#else
#if KNN_HAVE_TORCH
constexpr const char* kVersion = "libtorch " KNN_TORCH_VERSION;

// The libtorch half, loaded once, on the first supports() or query(); never unloaded (libtorch can't be).
using ModuleQuery = void (*)(int, long, const knn::Problem*, knn::Neighbors, knn::RunContext*);
struct Module {
  ModuleQuery query = nullptr;
  std::string error;  // why it did not load
};
const Module& torch_module() {
  static const Module loaded = [] {
    Module m;
    void* handle = dlopen(KNN_TORCH_MODULE_PATH, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) m.query = reinterpret_cast<ModuleQuery>(dlsym(handle, "knn_torch_query"));
    if (m.query == nullptr) m.error = std::string("libtorch module not loaded: ") + dlerror();
    return m;
  }();
  return loaded;
}

std::optional<std::string> unavailable() {
  if (torch_module().query == nullptr) return torch_module().error;
  return std::nullopt;
}

template <std::size_t V>
void torch_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  if (const auto why = unavailable()) throw std::runtime_error(*why);  // supports() skips first
  torch_module().query(int(V), ctx.env.params.integer("block_kib"), &p, out, &ctx);
}
#else
constexpr const char* kVersion = "not built with libtorch";

std::optional<std::string> unavailable() { return knn::peers::built_without(kLibrary, kInstall); }

template <std::size_t V>
void torch_query(const knn::Problem&, knn::Neighbors, knn::RunContext&) {  // supports() skips first
  throw std::runtime_error(knn::peers::built_without(kLibrary, kInstall));
}
#endif

template <std::size_t V>
knn::VersionDesc describe() {
  const Variant& v = kVariants[V];
  knn::VersionDesc d;
  d.id = v.id;
  d.title = fmt::format("PyTorch, {}: {}, chunked; {}", kVersion, v.what,
                        v.gpu_allowed ? "on the first selected GPU when libtorch has CUDA, else the CPU" : "on the CPU");
  d.family = knn::Family::peer;
  d.self_join = true;
  d.supports = [](const knn::Problem& p, const knn::Environment& env) -> std::optional<std::string> {
    if (const auto why = unavailable()) return why;
    const knn::Problem s = searched_problem(p);
    const std::size_t lists = std::size_t(std::min(s.topk, s.n)) * kBytesPerListSlot;
    const long kib = env.params.integer("block_kib");
    if (lists > std::max(budget(kib, true), budget(kib, false)))
      return fmt::format("topk {} needs {} of lists for one query, over the block budget", s.topk, gib(lists));
    return std::nullopt;
  };
  // Upper bounds: the inputs, norms, answers and block budget on the device (the GPU path checks the
  // device's free memory itself before uploading: a peer that needs no GPU is not checked by the
  // harness); on the host the CPU path's block and lists, and a self-join's widened answers.
  d.device_bytes = [](const knn::Problem& p, const knn::Environment&) {
    const knn::Problem s = searched_problem(p);
    return device_fixed_bytes(s) + std::min(kGpuBudget, plan(s, kGpuBudget).bytes);
  };
  d.host_bytes = [](const knn::Problem& p, const knn::Environment&) {
    const knn::Problem s = searched_problem(p);
    const std::size_t wide = p.self_join ? 8 * s.result_slots() : 0;
    return wide + 4 * (std::size_t(s.m) + std::size_t(s.n)) + std::min(kCpuBudget, plan(s, kCpuBudget).bytes);
  };
  d.make = knn::query_only(torch_query<V>);
  d.params = {knn::ParamDecl::integer("block_kib", 0, 0, 1 << 24,
                                      "the distance block's budget, KiB; 0: 1 GiB on a GPU (at most 3/4 of its free memory), 256 MiB on the CPU",
                                      "KNN_TORCH_BLOCK_KIB")};
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe<0>());
KNN_REGISTER_VERSION(describe<1>());
KNN_REGISTER_VERSION(describe<2>());
#endif
