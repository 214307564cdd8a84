#include "datafile.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/errors.hpp"
#include "datafile_detail.hpp"

namespace knn {

// The binary formats are little-endian float32; reading them straight into floats needs a
// little-endian host (x86-64, AArch64).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "data files are read as little-endian float32");

using namespace datafile_detail;

namespace {

// ---------------------------------------------------------------- .fvecs
std::int32_t fvecs_dim_at(const File& f, std::uint64_t offset) {
  unsigned char b[4];
  f.read_at(offset, b, 4);
  return std::int32_t(le32(b));
}

DataFileInfo inspect_fvecs(const std::string& path, const File& f, DataFileInfo info) {
  const std::uint64_t size = f.size();
  if (size == 0) refuse(path, "empty file: expected .fvecs vectors (an int32 dimension, then that many float32)");
  if (size < 4) refuse(path, fmt::format("short file: {} bytes: expected at least the 4-byte dimension of vector 0", size));
  const std::int32_t dim = fvecs_dim_at(f, 0);
  if (dim < 1) refuse(path, fmt::format("vector 0 at byte 0 has dimension {}: expected a dimension ≥ 1", dim));
  const std::uint64_t record = 4 + 4 * std::uint64_t(dim);
  if (size % record != 0) {
    // Find out why: a vector of another dimension, or a cut last vector. Error path only.
    for (std::uint64_t r = 0, at = 0; at < size; ++r, at += record) {
      if (at + 4 > size || at + record > size)
        refuse(path, fmt::format("short file: {} bytes is not a whole number of {}-byte vectors of dimension {}: vector {} at byte {} is cut after {} bytes",
                                 size, record, dim, r, at, size - at));
      const std::int32_t d = fvecs_dim_at(f, at);
      if (d != dim) refuse(path, fmt::format("vector {} at byte {} has dimension {}, expected {}", r, at, d, dim));
    }
  }
  info.rows = size / record;
  info.cols = std::uint64_t(dim);
  return info;
}

// ---------------------------------------------------------------- raw float32
DataFileInfo inspect_raw(const std::string& path, const File& f, DataFileInfo info, std::uint64_t cols) {
  if (cols == 0) refuse(path, "a raw float32 file needs the row length k from the case");
  const std::uint64_t row_bytes = 4 * cols;
  if (f.size() % row_bytes != 0)
    refuse(path, fmt::format("short file: {} bytes is not a whole number of {}-byte rows (k = {} float32): the last row, row {} at byte {}, is cut after {} bytes",
                             f.size(), row_bytes, cols, f.size() / row_bytes, f.size() / row_bytes * row_bytes, f.size() % row_bytes));
  info.rows = f.size() / row_bytes;
  info.cols = cols;
  return info;
}

}  // namespace

namespace datafile_detail {
DataFileInfo inspect_open(const std::string& path, const File& f, std::uint64_t raw_cols) {
  DataFileInfo info;
  info.path = path;
  info.format = data_format_of(path);
  info.file_bytes = f.size();
  info.file = path;
  switch (info.format) {
    case DataFormat::npy: return inspect_npy(path, f, info);
    case DataFormat::fvecs: return inspect_fvecs(path, f, info);
    case DataFormat::raw_f32: return inspect_raw(path, f, info, raw_cols);
    case DataFormat::csv: return inspect_csv(path, f, info);
    case DataFormat::idx: return inspect_idx(path, info);
    case DataFormat::hdf5: break;  // read by name, never through File (inspect_data_file)
  }
  return info;
}
}  // namespace datafile_detail

const char* to_string(DataFormat f) {
  switch (f) {
    case DataFormat::npy: return "npy";
    case DataFormat::fvecs: return "fvecs";
    case DataFormat::raw_f32: return "raw float32";
    case DataFormat::csv: return "csv";
    case DataFormat::idx: return "idx";
    case DataFormat::hdf5: return "hdf5";
  }
  return "?";
}

namespace {
bool ends_with(const std::string& s, const char* tail) {
  const std::size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}
bool is_hdf5_name(const std::string& file) {
  const std::string ext = lower_extension(file);
  return ext == ".hdf5" || ext == ".h5";
}
// "FILE.hdf5:DATASET" → the position of the ':' (npos when the path is not of that form).
std::size_t hdf5_colon(const std::string& path) {
  const auto colon = path.find_last_of(':');
  return colon != std::string::npos && is_hdf5_name(path.substr(0, colon)) ? colon : std::string::npos;
}
}  // namespace

std::string data_file_on_disk(const std::string& path) {
  const auto colon = hdf5_colon(path);
  return colon == std::string::npos ? path : path.substr(0, colon);
}

DataFormat data_format_of(const std::string& path) {
  if (hdf5_colon(path) != std::string::npos) {
    if (hdf5_colon(path) + 1 == path.size()) refuse(path, "no dataset after ':': expected FILE.hdf5:DATASET, e.g. :train or :test");
    return DataFormat::hdf5;
  }
  if (is_hdf5_name(path)) refuse(path, "an HDF5 file without a dataset: expected FILE.hdf5:DATASET, e.g. :train or :test");
  std::string lower = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ends_with(lower, ".gz")) lower.resize(lower.size() - 3);
  if (ends_with(lower, "ubyte") || ends_with(lower, ".idx")) return DataFormat::idx;
  const std::string ext = lower_extension(path);
  if (ext == ".npy") return DataFormat::npy;
  if (ext == ".fvecs") return DataFormat::fvecs;
  if (ext == ".bin" || ext == ".f32") return DataFormat::raw_f32;
  if (ext == ".csv") return DataFormat::csv;
  refuse(path, fmt::format("{}: expected one of .npy, .fvecs, .bin, .f32 (raw little-endian float32), .csv, IDX (…ubyte, .idx, gzipped or not), FILE.hdf5:DATASET",
                           ext.empty() ? std::string("no extension") : fmt::format("unknown extension \"{}\"", shown(ext, 20))));
}

DataFileInfo inspect_data_file(const std::string& path, std::uint64_t raw_cols) {
  // refuse an unknown extension before touching the file
  if (data_format_of(path) == DataFormat::hdf5) {
    DataFileInfo info;
    info.path = path;
    info.format = DataFormat::hdf5;
    info.file = data_file_on_disk(path);
    info.dataset = path.substr(info.file.size() + 1);
    return inspect_hdf5(info);
  }
  const File f(path);
  return inspect_open(path, f, raw_cols);
}

void expect_shape(const DataFileInfo& info, std::uint64_t rows, const char* rows_name, std::uint64_t cols) {
  if (info.rows != rows || info.cols != cols)
    refuse(info.path, fmt::format("{} rows of {} floats: expected {} = {} rows of k = {}{}", info.rows, info.cols, rows_name, rows, cols,
                                  info.format == DataFormat::csv ? csv_header_note(info) : std::string()));
}

namespace {
// A ground truth's .npy header, checked against the case; `f` is left open for reading the indices.
DataFileInfo inspect_npy_truth(const std::string& path, const File& f, std::uint64_t m, int topk) {
  if (data_format_of(path) != DataFormat::npy) refuse(path, "expected an int32 .npy file of neighbour indices (m rows) as ground truth");
  DataFileInfo info;
  info.path = path;
  info = inspect_npy(path, f, info, true);
  expect_truth_shape(path, info.rows, info.cols, m, topk);
  return info;
}
}  // namespace

bool inspect_ground_truth(const std::string& path, std::uint64_t m, int topk) {
  if (data_format_of(path) == DataFormat::hdf5) return inspect_hdf5_neighbors(path, m, topk);
  const File f(path);
  inspect_npy_truth(path, f, m, topk);
  return true;
}

bool read_ground_truth(const std::string& path, std::uint64_t m, std::uint64_t n, int topk, std::vector<std::int32_t>& out) {
  if (data_format_of(path) == DataFormat::hdf5) return read_hdf5_neighbors(path, m, n, topk, out);
  const File f(path);
  const DataFileInfo info = inspect_npy_truth(path, f, m, topk);
  std::vector<std::int32_t> all(info.rows * info.cols);
  f.read_at(info.data_offset, all.data(), all.size() * 4);
  first_columns(path, all, info.cols, m, n, topk, out);
  return true;
}

}  // namespace knn
