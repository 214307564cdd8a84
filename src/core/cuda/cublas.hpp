#pragma once
// cuBLAS, loaded when first used (dlopen) instead of linked. A process linked to libcublas runs its initializers
// and those of libcublasLt at start-up: about 0.4 s and 200 MB on a 2-core machine, paid by every knnbench call
// (twice: it re-executes itself with its OpenMP settings) and every test process, GPU or not. The start-up rates
// (src/rates.cu) and v15's int8 GEMM (kernels/bruteforce/detail/int8/exact_int8.cu) call cuBLAS through api().
#include <cublas_v2.h>  // types and constants; the functions come from the table below
#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <type_traits>

namespace knn::cuda::blas {

struct Api {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  // cublasGemmEx with a cublasComputeType_t (the C function; C++ also sees an inline overload taking a cudaDataType).
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*, const void*,
                            cudaDataType, int, const void*, cudaDataType, int, const void*, void*, cudaDataType, int,
                            cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  std::string library;  // the file loaded (its soname, or the build's path to it)
  std::string error;    // why the library or a function is missing; empty when all were found
  bool ok() const { return error.empty(); }
};

// The table's GEMM type is the header's C function, checked when compiling (unevaluated: no reference to the
// symbol): the cast from the overloaded name picks the declaration of exactly that type, and does not compile if
// cublas_v2.h has none.
static_assert(std::is_same_v<decltype(Api::gemm_ex), decltype(static_cast<decltype(Api::gemm_ex)>(&cublasGemmEx))>,
              "Api::gemm_ex is not cublasGemmEx's type");

// The table, loaded once per process (thread-safe). First the soname of the cuBLAS the code was compiled
// against (libcublas.so.<major>, found as the dynamic loader finds libraries), then the build's own path to it.
inline const Api& api() {
  static const Api loaded = [] {
    Api a;
    a.library = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(a.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why = lib ? "" : std::string(dlerror());
#ifdef KNN_CUBLAS_LIBRARY
    if (lib == nullptr) {
      if ((lib = dlopen(KNN_CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL)) != nullptr)
        a.library = KNN_CUBLAS_LIBRARY;
      else
        why += std::string("; ") + dlerror();  // names the build's path
    }
#endif
    if (lib == nullptr) {
      a.error = "cuBLAS could not be loaded: " + why;
      return a;
    }
    const auto find = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (fn == nullptr && a.error.empty()) a.error = a.library + " has no " + name;
    };
    find(a.create, "cublasCreate_v2");
    find(a.destroy, "cublasDestroy_v2");
    find(a.set_stream, "cublasSetStream_v2");
    find(a.gemm_ex, "cublasGemmEx");
    find(a.status_string, "cublasGetStatusString");
    return a;
  }();
  return loaded;
}

// The table, or a std::runtime_error naming `who` and what is missing.
inline const Api& require(const char* who) {
  const Api& a = api();
  if (!a.ok()) throw std::runtime_error(std::string(who) + ": " + a.error);
  return a;
}

}  // namespace knn::cuda::blas
