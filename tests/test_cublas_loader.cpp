// cuBLAS is loaded when first used (src/core/cuda/cublas.hpp), not linked: a knnbench call that needs no GEMM never
// loads it, and the table finds every function it names. Runs without a GPU (the calls below need none).
#include <gtest/gtest.h>

#include <string>

#include "cli_support.hpp"

#if KNN_HAVE_CUDA
#include "core/cuda/cublas.hpp"
#endif
#ifndef KNN_TEST_HAVE_FAISS_GPU
#define KNN_TEST_HAVE_FAISS_GPU 0
#endif

namespace {

#if KNN_HAVE_CUDA
// The dynamic loader's account of every file it opens (LD_DEBUG=files), for `knnbench --help`.
TEST(CublasLoader, AKnnbenchCallThatNeedsNoGemmNeverLoadsIt) {
#if KNN_TEST_HAVE_FAISS_GPU
  GTEST_SKIP() << "built with faiss's GPU library, which links cuBLAS itself: knnbench loads it at start-up";
#endif
  const auto r = knn::testing::run("LD_DEBUG=files " + std::string(KNN_BINARY), "--help");
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_NE(r.out.find("file=libcudart"), std::string::npos) << "LD_DEBUG gave no account of the files loaded:\n" << r.out.substr(0, 2000);
  EXPECT_EQ(r.out.find("libcublas"), std::string::npos) << "knnbench --help loaded cuBLAS:\n" << r.out.substr(0, 4000);
}

TEST(CublasLoader, TheTableFindsEveryFunctionAndTheyAnswer) {
  const auto& blas = knn::cuda::blas::api();
  ASSERT_TRUE(blas.ok()) << blas.error;
  EXPECT_NE(blas.library.find("libcublas.so"), std::string::npos) << blas.library;
  EXPECT_NE(std::string(blas.status_string(CUBLAS_STATUS_NOT_INITIALIZED)).find("not initialized"), std::string::npos);
  EXPECT_EQ(&knn::cuda::blas::require("test"), &blas);
  // A handle needs a device: with one it is made (and destroyed), without one the call says why instead of failing
  // later; either way the function pointers were called.
  cublasHandle_t h = nullptr;
  const cublasStatus_t made = blas.create(&h);
  if (made == CUBLAS_STATUS_SUCCESS) {
    EXPECT_EQ(blas.set_stream(h, nullptr), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(blas.destroy(h), CUBLAS_STATUS_SUCCESS);
  } else {
    EXPECT_EQ(made, CUBLAS_STATUS_NOT_INITIALIZED) << blas.status_string(made);
  }
}
#else
TEST(CublasLoader, AKnnbenchCallThatNeedsNoGemmNeverLoadsIt) { GTEST_SKIP() << "built without CUDA: no cuBLAS to load"; }
#endif

}  // namespace
