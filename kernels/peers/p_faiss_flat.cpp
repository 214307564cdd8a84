// p-faiss-flat: faiss's exact brute force, faiss::knn_L2sqr, as a peer. From
// faiss::distance_compute_blas_threshold (20) queries on, faiss computes ‖q‖² + ‖r‖² − 2 q·r with a
// BLAS sgemm, which loses precision when the points are far from the origin compared with their
// distances (clustered low-dimensional data): the harness validates its answers like any
// version's, so such cases show as failures. Below the threshold faiss sums (q − r)² directly.
// Self-joins: topk + 1 searched, the point itself dropped (as the CPU trees do). The results record
// faiss's version in the title, and the path taken with the BLAS library that ran it.
#include <omp.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "core/topk.hpp"
#include "kernels/device/tree_threads.hpp"
#include "kernels/peers/peers.hpp"

#ifndef KNN_HAVE_FAISS
#define KNN_HAVE_FAISS 0  // cmake/peers.cmake sets it
#endif
#if KNN_HAVE_FAISS
#include <dlfcn.h>
#include <link.h>
#include <faiss/Index.h>
#include <faiss/utils/distances.h>

extern "C" void sgemm_();  // only its address is taken: which BLAS library answers it
#endif

namespace {

#if KNN_HAVE_FAISS
constexpr const char* kTitle = "faiss " KNN_PEER_STR(FAISS_VERSION_MAJOR) "." KNN_PEER_STR(FAISS_VERSION_MINOR) "." KNN_PEER_STR(
    FAISS_VERSION_PATCH) " knn_L2sqr (exact brute force; BLAS ‖q‖² + ‖r‖² − 2 q·r from 20 queries on)";

// The BLAS that answers sgemm_: the shared object holding it, any other loaded library named like a
// BLAS (a wrapper's provider: libblas.so.3 -> libopenblas.so.0), and OpenBLAS's own configuration
// line when it is OpenBLAS. E.g. "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3".
std::string blas_library() {
  Dl_info info{};
  std::string out = dladdr(reinterpret_cast<void*>(&sgemm_), &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "unknown";
  dl_iterate_phdr(
      [](dl_phdr_info* lib, std::size_t, void* data) {
        auto& s = *static_cast<std::string*>(data);
        const std::string name = lib->dlpi_name != nullptr ? lib->dlpi_name : "";
        if ((name.find("blas") != std::string::npos || name.find("mkl") != std::string::npos) && s.find(name) == std::string::npos)
          s += ", " + name;
        return 0;
      },
      &out);
  using Config = char* (*)();
  if (auto config = reinterpret_cast<Config>(dlsym(RTLD_DEFAULT, "openblas_get_config")))
    out += std::string("; ") + config();
  return out;
}

// One call of knn_L2sqr with the run's OpenMP threads; int64 labels narrowed to the answer's int32.
void faiss_search(const knn::Problem& p, knn::Neighbors out, int threads) {
  std::vector<std::int64_t> labels(p.result_slots());
  struct Threads {  // faiss's OpenMP loops take the calling thread's setting; restored on any exit
    int before = omp_get_max_threads();
    explicit Threads(int n) { omp_set_num_threads(n); }
    ~Threads() { omp_set_num_threads(before); }
  } scope(threads);
  faiss::knn_L2sqr(p.queries, p.references, std::size_t(p.dim), std::size_t(p.m), std::size_t(p.n), std::size_t(p.topk),
                   out.distances, labels.data());
  // -1 (fewer than topk found) stays -1: out of range, and the validation says so.
  for (std::size_t i = 0; i < labels.size(); ++i) out.indices[i] = std::int32_t(labels[i]);
}

void faiss_query(const knn::Problem& p, knn::Neighbors out, knn::RunContext& ctx) {
  const int threads = knn::tree::tree_threads(ctx.env);
  const bool blas = p.m >= faiss::distance_compute_blas_threshold;
  static const std::string blas_name = blas_library();  // once: the libraries loaded do not change
  std::string path = blas ? "BLAS sgemm (" + blas_name + ")" : "direct (q - r)^2, fewer queries than faiss's BLAS threshold";
  if (!p.self_join) {
    faiss_search(p, out, threads);
    knn::peers::order_ties(p, out);
  } else {
    const knn::Problem wide = knn::widened_for_self_join(p);
    std::vector<std::int32_t> indices(wide.result_slots());
    std::vector<float> distances(wide.result_slots());
    const knn::Neighbors wide_out{indices.data(), distances.data()};
    faiss_search(wide, wide_out, threads);
    knn::peers::order_ties(wide, wide_out);
    knn::drop_self(p, indices.data(), distances.data(), out);
    path += "; self-join: topk + 1 searched, the point itself dropped";
  }
  ctx.path = path;
}
#else
constexpr const char* kTitle = "faiss knn_L2sqr (exact brute force; not built: faiss was not found)";
void faiss_query(const knn::Problem&, knn::Neighbors, knn::RunContext&) {  // supports() skips first
  throw std::runtime_error(knn::peers::built_without("faiss", "apt-get install libfaiss-dev"));
}
#endif

knn::VersionDesc describe() {
  knn::VersionDesc d;
  d.id = "p-faiss-flat";
  d.title = kTitle;
  d.family = knn::Family::peer;
  d.self_join = true;
  d.supports = [](const knn::Problem&, const knn::Environment&) {
    return knn::peers::unless_built(KNN_HAVE_FAISS, "faiss", "apt-get install libfaiss-dev, or scripts/setup/install-deps.sh");
  };
  // faiss's int64 labels and a self-join's widened rows; faiss's own blocks (4096 × 1024 inner
  // products, the norms) on top.
  d.host_bytes = [](const knn::Problem& p, const knn::Environment&) {
    const std::size_t slots = std::size_t(p.m) * std::size_t(p.topk + (p.self_join ? 1 : 0));
    return slots * (8 + (p.self_join ? 8 : 0)) + 4096 * 1024 * 4 + 4 * (std::size_t(p.m) + std::size_t(p.n));
  };
  d.make = knn::query_only(faiss_query);
  return d;
}

}  // namespace

KNN_REGISTER_VERSION(describe());
