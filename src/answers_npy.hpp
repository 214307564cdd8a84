#pragma once
// --dump-answers DIR: a version's last answer for a case as two NumPy files, so anyone can check
// knnbench against their own tool (README has the five lines of NumPy):
//   DIR/case<ID>-<VERSION>-indices.npy    int32,   shape (m, topk), rows in (distance, index) order
//   DIR/case<ID>-<VERSION>-distances.npy  float32, shape (m, topk), squared Euclidean distances
#include <cstdint>
#include <string>

namespace knn {

// Writes one 2-D little-endian array as .npy version 1.0 (the header padded to 64 bytes).
// `dtype` is "<i4" or "<f4". Throws std::runtime_error naming the file and the reason.
void write_npy(const std::string& path, const void* data, const char* dtype, std::int64_t rows, std::int64_t cols);

// Both files of one answer; returns the indices file's path.
std::string dump_answers(const std::string& dir, int case_id, const std::string& version, const std::int32_t* indices,
                         const float* distances, std::int64_t m, std::int64_t topk);

}  // namespace knn
