// Rows of a data file read a range at a time (DataFileRows, datafile.hpp): the one reading path of
// every format, the whole file being the range of all its rows. The fixed-size formats (.npy, raw
// float32, .fvecs) live here; CSV, IDX and HDF5 keep theirs beside their parsers.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "datafile.hpp"
#include "datafile_detail.hpp"

namespace knn {

using namespace datafile_detail;

namespace {

// The file opened again and inspected again: one that changed since `info` was taken is refused.
void expect_unchanged(const DataFileInfo& info, const File& f) {
  if (f.size() != info.file_bytes)
    refuse(info.path, fmt::format("{} bytes, was {} when the matrix was loaded: the file changed since", f.size(), info.file_bytes));
  if (info.format == DataFormat::csv || info.format == DataFormat::idx) return;  // their structure is checked again while reading
  const DataFileInfo now = inspect_open(info.path, f, info.cols);
  if (now.rows != info.rows || now.cols != info.cols || now.data_offset != info.data_offset)
    refuse(info.path, fmt::format("{} rows of {} floats, was {} of {} when the matrix was loaded: the file changed since", now.rows, now.cols,
                                  info.rows, info.cols));
}

// .npy and raw float32: rows of cols float32 from data_offset on.
class DenseRows final : public RowReader {
 public:
  explicit DenseRows(const DataFileInfo& info) : info_(info), f_(info.path) { expect_unchanged(info_, f_); }
  void read(std::uint64_t first, std::uint64_t count, float* out) override {
    const std::uint64_t floats = count * info_.cols, at = info_.data_offset + 4 * first * info_.cols;
    f_.read_at(at, out, floats * 4);
    const std::size_t bad = first_non_finite(out, std::size_t(floats));
    if (bad < floats)
      refuse(info_.path, fmt::format("{} at byte {} (row {}, coordinate {}): expected finite float32 values", non_finite_name(out[bad]),
                                     at + 4 * std::uint64_t(bad), first + bad / info_.cols, bad % info_.cols));
  }

 private:
  DataFileInfo info_;
  File f_;
};

// .fvecs: each row an int32 dimension, then that many float32.
class FvecsRows final : public RowReader {
 public:
  explicit FvecsRows(const DataFileInfo& info) : info_(info), f_(info.path) { expect_unchanged(info_, f_); }
  void read(std::uint64_t first, std::uint64_t rows, float* out) override {
    const std::uint64_t record = 4 + 4 * info_.cols;
    const std::uint64_t per_chunk = std::max<std::uint64_t>(1, kReadChunk / record);
    std::vector<unsigned char> buf(std::size_t(std::min(per_chunk, rows) * record));
    for (std::uint64_t r0 = 0; r0 < rows; r0 += per_chunk) {
      const std::uint64_t count = std::min(per_chunk, rows - r0);
      f_.read_at((first + r0) * record, buf.data(), count * record);
      for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t row = first + r0 + i, at = row * record;
        const unsigned char* rec = buf.data() + i * record;
        const std::int32_t d = std::int32_t(le32(rec));
        if (d < 1 || std::uint64_t(d) != info_.cols)
          refuse(info_.path, fmt::format("vector {} at byte {} has dimension {}, expected {}", row, at, d, info_.cols));
        float* dst = out + (r0 + i) * info_.cols;
        std::memcpy(dst, rec + 4, std::size_t(info_.cols) * 4);
        const std::size_t bad = first_non_finite(dst, std::size_t(info_.cols));
        if (bad < info_.cols)
          refuse(info_.path, fmt::format("{} at byte {} (vector {}, coordinate {}): expected finite float32 values", non_finite_name(dst[bad]),
                                         at + 4 + 4 * bad, row, bad));
      }
    }
  }

 private:
  DataFileInfo info_;
  File f_;
};

}  // namespace

DataFileRows::DataFileRows(const DataFileInfo& info) : info_(info) {
  switch (info.format) {
    case DataFormat::hdf5: reader_ = hdf5_rows(info); return;  // checks the shape and the file's size again itself
    case DataFormat::fvecs: reader_ = std::make_unique<FvecsRows>(info); return;
    case DataFormat::npy:
    case DataFormat::raw_f32: reader_ = std::make_unique<DenseRows>(info); return;
    case DataFormat::csv:
    case DataFormat::idx: break;
  }
  expect_unchanged(info, File(info.path));
  reader_ = info.format == DataFormat::csv ? csv_rows(info) : idx_rows(info);
}

DataFileRows::~DataFileRows() = default;

void DataFileRows::read(std::uint64_t first, std::uint64_t count, float* out) {
  if (first < next_ || first > info_.rows || count > info_.rows - first)
    refuse(info_.path, fmt::format("rows [{}, {}) asked for after rows up to {} of {}: expected increasing ranges within the file", first,
                                   first + count, next_, info_.rows));
  if (count > 0) reader_->read(first, count, out);
  next_ = first + count;
}

void DataFileRows::finish() { reader_->finish(); }

void read_data_rows(const DataFileInfo& info, std::uint64_t first, std::uint64_t count, float* out) {
  DataFileRows rows(info);
  rows.read(first, count, out);
  rows.finish();
}

void read_data_file(const DataFileInfo& info, float* out) { read_data_rows(info, 0, info.rows, out); }

}  // namespace knn
