#pragma once
// Facts about this build, generated at build time by cmake/BuildInfo.cmake.
namespace knn::build_info {
extern const char* const git_sha;  // short sha, "-dirty" when tracked files differ
extern const char* const version;
extern const char* const build_type;
extern const char* const cxx_compiler;
extern const char* const cuda_compiler;       // empty when built without CUDA
extern const char* const cuda_architectures;  // comma separated
}  // namespace knn::build_info
