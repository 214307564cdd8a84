#pragma once
// --dump-answers DIR: a version's last answer for a case as two NumPy files, so anyone can check
// knnbench against their own tool (README has the five lines of NumPy):
//   DIR/case<ID>-<VERSION>-indices.npy    int32,   shape (m, topk), rows in (distance, index) order
//   DIR/case<ID>-<VERSION>-distances.npy  float32, shape (m, topk), squared Euclidean distances
// Both are written whole to temporaries in DIR ("<name>.tmp.<pid>", created with O_EXCL and
// O_NOFOLLOW) and renamed into place only when both are complete: a failed write (a full disk, a
// file-size limit) removes the temporaries and leaves no torn file; rename(2) replaces a name, never
// writes through a symbolic link (the runner refuses links there before the run: runner.cpp).
#include <cstdint>
#include <string>

namespace knn {

// The start of the note a result gets when its answer could not be written (the run goes on).
inline constexpr const char* kAnswerNotDumped = "answer not dumped: ";

// The two files of (case, version) in `dir`: the indices file, then the distances file.
std::string dump_indices_path(const std::string& dir, int case_id, const std::string& version);
std::string dump_distances_path(const std::string& dir, int case_id, const std::string& version);

// Both files of one answer, as said above; returns the indices file's path. Throws
// std::runtime_error naming the file (its final name) and the reason.
std::string dump_answers(const std::string& dir, int case_id, const std::string& version, const std::int32_t* indices,
                         const float* distances, std::int64_t m, std::int64_t topk);

}  // namespace knn
