#pragma once
// Point sets read from files instead of generated: NumPy .npy, .fvecs, raw float32 (.bin/.f32)
// and CSV. inspect_data_file reads only what it needs to learn the shape (a header, the file
// size; for CSV one pass counting rows) and allocates nothing in proportion to the data;
// read_data_file fills a buffer the caller sized from that shape and refuses NaN and ±Inf.
// Every problem throws ConfigError with one line that starts with the data file's path and
// names the byte offset (binary) or line:column (CSV) that is wrong.
#include <cstdint>
#include <string>

namespace knn {

enum class DataFormat { npy, fvecs, raw_f32, csv };
const char* to_string(DataFormat f);

struct DataFileInfo {
  std::string path;
  DataFormat format = DataFormat::raw_f32;
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;           // floats per row (the dimension k)
  std::uint64_t data_offset = 0;    // byte where the values start (after an .npy header; 0 otherwise)
  std::uint64_t file_bytes = 0;     // the size seen by inspect; read refuses a file that changed since
  std::uint64_t csv_first_row_line = 1;  // CSV: the 1-based line of the first row (2 after a header)
};

// The format from the extension (.npy, .fvecs, .bin, .f32, .csv); anything else is refused.
DataFormat data_format_of(const std::string& path);

// Learns the shape of a data file. Raw float32 files have no header, so their row length comes
// from `raw_cols` (the case's k); the other formats ignore it.
DataFileInfo inspect_data_file(const std::string& path, std::uint64_t raw_cols);

// Refuses a file whose shape is not `rows` × `cols`, naming both:
// "PATH: 1000 rows of 16 floats: expected n = 1024 rows of k = 16" (rows_name "n").
void expect_shape(const DataFileInfo& info, std::uint64_t rows, const char* rows_name, std::uint64_t cols);

// Reads info.rows × info.cols floats, row-major, into `out` (which holds at least that many).
// The file is inspected again first: one that changed since `info` was taken is refused.
void read_data_file(const DataFileInfo& info, float* out);

}  // namespace knn
