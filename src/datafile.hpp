#pragma once
// Point sets read from files instead of generated: NumPy .npy, .fvecs, raw float32 (.bin/.f32),
// CSV, IDX (MNIST's format, gzipped or not: unsigned bytes or float32, stored as float32) and a
// dataset of an HDF5 file ("FILE.hdf5:train", ann-benchmarks' layout; needs a build with HDF5). inspect_data_file reads only what it needs to learn the shape (a header, the file
// size; for CSV one pass counting rows) and allocates nothing in proportion to the data;
// read_data_file fills a buffer the caller sized from that shape and refuses NaN and ±Inf.
// Every problem throws ConfigError with one line that starts with the data file's path and
// names the byte offset (binary) or line:column (CSV) that is wrong.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace knn {
namespace datafile_detail {
class RowReader;
}

enum class DataFormat { npy, fvecs, raw_f32, csv, idx, hdf5 };
const char* to_string(DataFormat f);

struct DataFileInfo {
  std::string path;
  DataFormat format = DataFormat::raw_f32;
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;           // floats per row (the dimension k)
  std::uint64_t data_offset = 0;    // byte where the values start (after an .npy header; 0 otherwise)
  std::uint64_t file_bytes = 0;     // the size seen by inspect; read refuses a file that changed since
  std::uint64_t csv_first_row_line = 1;  // CSV: the 1-based line of the first row (2 after a header)
  unsigned idx_type = 0;            // IDX: the element type byte (0x08 unsigned byte, 0x0D float32)
  std::string file;                 // the file on disk: `path` without an HDF5 ":dataset" suffix
  std::string dataset;              // HDF5: the dataset's name
};

// The format from the extension (.npy, .fvecs, .bin, .f32, .csv; IDX: a name ending in "ubyte" or
// ".idx", either with ".gz"; HDF5: "FILE.hdf5:DATASET" or "FILE.h5:DATASET"); anything else is refused.
DataFormat data_format_of(const std::string& path);

// The file on disk that a data-file path names (an HDF5 path without its ":dataset").
std::string data_file_on_disk(const std::string& path);

// Whether this build reads HDF5 files (libhdf5 found at build time).
bool built_with_hdf5();

// Ground truth: a case's ground_truth_file (an int32 .npy) or the "neighbors" dataset an HDF5 queries
// file holds beside its queries (ann-benchmarks' layout: m rows sorted by distance, int32 or int64).
// Either must have m rows and at least topk columns; anything else is refused (ConfigError) with one
// wording: "PATH: 10000 rows of 10 neighbour indices: expected m = 10000 rows of at least topk = 100".
// inspect_ground_truth reads only the shape (the matrix loader calls it, before any case runs);
// read_ground_truth fills `out` with m × topk indices, each in [0, n) (one outside is named with the
// value the file holds). Both return false, and read nothing, for an HDF5 file without "neighbors".
bool inspect_ground_truth(const std::string& path, std::uint64_t m, int topk);
bool read_ground_truth(const std::string& path, std::uint64_t m, std::uint64_t n, int topk, std::vector<std::int32_t>& out);

// Learns the shape of a data file. Raw float32 files have no header, so their row length comes
// from `raw_cols` (the case's k); the other formats ignore it.
DataFileInfo inspect_data_file(const std::string& path, std::uint64_t raw_cols);

// Refuses a file whose shape is not `rows` × `cols`, naming both:
// "PATH: 1000 rows of 16 floats: expected n = 1024 rows of k = 16" (rows_name "n").
void expect_shape(const DataFileInfo& info, std::uint64_t rows, const char* rows_name, std::uint64_t cols);

// Reads info.rows × info.cols floats, row-major, into `out` (which holds at least that many).
// The file is inspected again first: one that changed since `info` was taken is refused. It is
// read_data_rows of every row.
void read_data_file(const DataFileInfo& info, float* out);

// Rows of a data file read in increasing order, a range at a time: under mpirun each rank reads
// only its rows of the references, and rank 0 streams them all in pieces (for the checksum and the
// validation reference) reading the file once. Opening checks the file against `info` as
// read_data_file does (its size, header, shape); read() checks every value it stores as the whole
// read does (finite, a number, an .fvecs dimension), naming the row of the whole file; rows passed
// over are checked for their structure only (a CSV line's field count); finish() checks what
// follows the last row read (more rows, trailing or missing data: .npy, .fvecs and raw float32 have
// their sizes checked on opening, CSV and IDX read on to the end).
class DataFileRows {
 public:
  explicit DataFileRows(const DataFileInfo& info);
  ~DataFileRows();
  DataFileRows(const DataFileRows&) = delete;
  DataFileRows& operator=(const DataFileRows&) = delete;
  // Rows [first, first + count) into `out` (count × info.cols floats); a range that starts before
  // the end of the last one, or ends past info.rows, is refused.
  void read(std::uint64_t first, std::uint64_t count, float* out);
  void finish();

 private:
  DataFileInfo info_;
  std::unique_ptr<datafile_detail::RowReader> reader_;
  std::uint64_t next_ = 0;
};

// Rows [first, first + count) of the file: DataFileRows' read, then finish.
void read_data_rows(const DataFileInfo& info, std::uint64_t first, std::uint64_t count, float* out);

}  // namespace knn
