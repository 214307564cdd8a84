// Reading a row range of a data file (read_data_rows, DataFileRows): what each rank reads under
// mpirun. Every format, written by the test from fresh random values, read whole and then by ranges
// (every rank's shard for 1, 2, 3, rows and more than rows ranks: one row, empty shards) and as a
// stream of pieces: each range is bit for bit those rows of the whole read. A bad value is refused
// by the range that holds it, named by its row in the whole file, and passed over by the others.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/problem.hpp"
#include "datafile.hpp"
#include "file_bytes.hpp"
#include "test_support.hpp"

#if KNN_HAVE_HDF5
#include <hdf5.h>
#endif

namespace {

namespace fs = std::filesystem;
using knn::ConfigError;

// A fresh folder per test.
struct Dir : knn::testing::TempFolder {
  Dir() : TempFolder("knn_shard_reads") {}
};

std::string raw(const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }
std::string le32(std::uint32_t x) { return {char(x), char(x >> 8), char(x >> 16), char(x >> 24)}; }
using knn::testing::be32;
using knn::testing::write;
using knn::testing::write_gz;

std::string npy(std::size_t rows, std::size_t cols, const std::vector<float>& v) {
  std::string h = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, cols);
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xff) + char(h.size() >> 8) + h + raw(v);
}
std::string fvecs(std::size_t cols, const std::vector<float>& v) {
  std::string s;
  for (std::size_t r = 0; r < v.size() / cols; ++r) s += le32(std::uint32_t(cols)) + raw({v.begin() + long(r * cols), v.begin() + long((r + 1) * cols)});
  return s;
}
std::string csv(std::size_t cols, const std::vector<float>& v, bool header) {
  std::string s = header ? "a,b,c\n" : "";
  for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", v[i], (i + 1) % cols ? "," : "\n");
  return s + "\n";  // a blank line at the end
}
std::string idx(unsigned type, std::size_t rows, std::size_t cols, const std::vector<float>& v) {
  std::string s{'\0', '\0', char(type), '\3'};
  s += be32(std::uint32_t(rows)) + be32(1) + be32(std::uint32_t(cols));
  for (float x : v) {
    if (type == 0x08) {
      s += char(std::uint8_t(x));
    } else {
      std::uint32_t bits;
      std::memcpy(&bits, &x, 4);
      s += be32(bits);
    }
  }
  return s;
}
#if KNN_HAVE_HDF5
void hdf5(const std::string& path, std::size_t rows, std::size_t cols, const std::vector<float>& v, bool as_double) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hsize_t dims[2] = {rows, cols};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t d = H5Dcreate2(f, "train", as_double ? H5T_IEEE_F64LE : H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(d);
  H5Sclose(space);
  H5Fclose(f);
}
#endif

// A format: the name of its file and how to write `rows` × `cols` values (whole numbers in
// [0, 256) for unsigned-byte IDX, random floats otherwise) there.
struct Format {
  std::string name;
  bool bytes;  // values are unsigned bytes
  std::function<void(const std::string& path, std::size_t rows, std::size_t cols, const std::vector<float>& v)> write;
};

std::vector<Format> formats() {
  std::vector<Format> f = {
      {"a.npy", false, [](auto& p, auto r, auto c, auto& v) { write(p, npy(r, c, v)); }},
      {"a.fvecs", false, [](auto& p, auto, auto c, auto& v) { write(p, fvecs(c, v)); }},
      {"a.bin", false, [](auto& p, auto, auto, auto& v) { write(p, raw(v)); }},
      {"a.csv", false, [](auto& p, auto, auto c, auto& v) { write(p, csv(c, v, false)); }},
      {"header.csv", false, [](auto& p, auto, auto c, auto& v) { write(p, csv(c, v, true)); }},
      {"a-idx3-ubyte", true, [](auto& p, auto r, auto c, auto& v) { write(p, idx(0x08, r, c, v)); }},
      {"a-idx3-ubyte.gz", true, [](auto& p, auto r, auto c, auto& v) { write_gz(p, idx(0x08, r, c, v)); }},
      {"float.idx.gz", false, [](auto& p, auto r, auto c, auto& v) { write_gz(p, idx(0x0D, r, c, v)); }},
  };
#if KNN_HAVE_HDF5
  f.push_back({"a.hdf5:train", false, [](auto& p, auto r, auto c, auto& v) { hdf5(knn::data_file_on_disk(p), r, c, v, false); }});
  // float64 holding float32 values: HDF5 converts them back exactly
  f.push_back({"double.h5:train", false, [](auto& p, auto r, auto c, auto& v) { hdf5(knn::data_file_on_disk(p), r, c, v, true); }});
#endif
  return f;
}

std::vector<float> values(std::size_t count, bool bytes, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> coord(-50.0f, 50.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = bytes ? float(gen() % 256) : coord(gen);
  return v;
}

bool same_bits(const float* a, const float* b, std::size_t count) { return std::memcmp(a, b, count * sizeof(float)) == 0; }

std::string error_of(const std::function<void()>& fn) { return knn::testing::config_error_of(fn); }

TEST(ShardReads, EveryRanksRowsOfEveryFormatAreThoseRowsOfTheWholeRead) {
  Dir dir;
  const std::size_t rows = 7, cols = 3;
  unsigned seed = 1;
  for (const Format& f : formats()) {
    SCOPED_TRACE(f.name);
    const std::string path = dir.file(f.name);
    const std::vector<float> v = values(rows * cols, f.bytes, seed++);
    f.write(path, rows, cols, v);
    const knn::DataFileInfo info = knn::inspect_data_file(path, cols);
    ASSERT_EQ(info.rows, rows);
    ASSERT_EQ(info.cols, cols);
    std::vector<float> whole(rows * cols, -1.f);
    knn::read_data_file(info, whole.data());
    ASSERT_TRUE(same_bits(whole.data(), v.data(), v.size()));
    // 1 rank (all rows), 2, 3, one row per rank, and more ranks than rows (empty shards).
    for (int ranks : {1, 2, 3, int(rows), int(rows) + 3}) {
      int covered = 0;
      for (int rank = 0; rank < ranks; ++rank) {
        const knn::Shard s = knn::shard_of(int(rows), rank, ranks);
        std::vector<float> mine(std::size_t(s.size) * cols + 1, -7.f);
        knn::read_data_rows(info, std::uint64_t(s.first), std::uint64_t(s.size), mine.data());
        EXPECT_TRUE(same_bits(mine.data(), whole.data() + std::size_t(s.first) * cols, std::size_t(s.size) * cols)) << ranks << " ranks, rank " << rank;
        EXPECT_EQ(mine.back(), -7.f) << "wrote past its rows: " << ranks << " ranks, rank " << rank;
        covered += s.size;
      }
      EXPECT_EQ(covered, int(rows));
    }
    // The last row alone, and nothing at either end.
    std::vector<float> one(cols);
    knn::read_data_rows(info, rows - 1, 1, one.data());
    EXPECT_TRUE(same_bits(one.data(), whole.data() + (rows - 1) * cols, cols));
    knn::read_data_rows(info, 0, 0, nullptr);
    knn::read_data_rows(info, rows, 0, nullptr);
    // A stream of pieces (rank 0's pass for the checksum), with a gap, reads the same rows.
    for (std::uint64_t piece : {1, 2, 7}) {
      knn::DataFileRows stream(info);
      std::vector<float> got(rows * cols, -1.f);
      for (std::uint64_t first = 0; first < rows; first += piece)
        if (first != 1) stream.read(first, std::min<std::uint64_t>(piece, rows - first), got.data() + first * cols);
      stream.finish();
      for (std::uint64_t r = 0; r < rows; ++r)
        if (r != 1 || piece != 1) EXPECT_TRUE(same_bits(got.data() + r * cols, whole.data() + r * cols, cols)) << "piece " << piece << ", row " << r;
    }
    // Ranges out of order or past the end are refused, naming the file.
    knn::DataFileRows stream(info);
    std::vector<float> two(2 * cols);
    stream.read(2, 2, two.data());
    EXPECT_NE(error_of([&] { stream.read(1, 1, one.data()); }).find("expected increasing ranges within the file"), std::string::npos);
    EXPECT_NE(error_of([&] { knn::read_data_rows(info, rows - 1, 2, one.data()); }).find(knn::data_file_on_disk(path)), std::string::npos);
  }
}

// A bad value in row 5 of 8: the ranges that hold it refuse it naming row 5 (or its line), the
// others read; the whole read refuses it too.
TEST(ShardReads, ABadValueIsRefusedByTheRangeThatHoldsItNamedByItsRowInTheFile) {
  Dir dir;
  const std::size_t rows = 8, cols = 2;
  std::vector<float> v = values(rows * cols, false, 9);
  v[5 * cols + 1] = std::numeric_limits<float>::quiet_NaN();
  struct Bad {
    std::string name, text;
  };
  std::string bad_csv = csv(cols, values(rows * cols, false, 9), false);
  std::size_t line6 = 0;
  for (int i = 0; i < 5; ++i) line6 = bad_csv.find('\n', line6) + 1;
  bad_csv.insert(line6, "x");  // line 6 (row 5) starts "x…": not a number
  std::vector<Bad> files = {{"a.npy", npy(rows, cols, v)}, {"a.fvecs", fvecs(cols, v)}, {"a.bin", raw(v)}, {"a.csv", bad_csv}};
  for (const Bad& b : files) {
    SCOPED_TRACE(b.name);
    const std::string path = dir.file(b.name);
    write(path, b.text);
    const knn::DataFileInfo info = knn::inspect_data_file(path, cols);
    std::vector<float> out(rows * cols);
    EXPECT_EQ(error_of([&] { knn::read_data_rows(info, 0, 5, out.data()); }), "");
    EXPECT_EQ(error_of([&] { knn::read_data_rows(info, 6, 2, out.data()); }), "");
    const std::string whole = error_of([&] { knn::read_data_file(info, out.data()); });
    const std::string mine = error_of([&] { knn::read_data_rows(info, 4, 3, out.data()); });
    EXPECT_EQ(mine, whole);  // the same message, the row numbered in the whole file
    const bool text = b.name == "a.csv";
    EXPECT_NE(mine.find(text ? "a.csv:6:1: \"x" : b.name == "a.fvecs" ? "(vector 5, coordinate 1)" : "(row 5, coordinate 1)"), std::string::npos) << mine;
    if (!text) EXPECT_EQ(mine.rfind(path + ": NaN at byte ", 0), 0u) << mine;
  }
}

// A file that changed after it was inspected (here: cut short, as a rank might see a file another
// wrote meanwhile) is refused by every range read, naming the file.
TEST(ShardReads, AFileCutAfterItWasInspectedIsRefusedByAnyRange) {
  Dir dir;
  const std::size_t rows = 6, cols = 2;
  const std::vector<float> v = values(rows * cols, true, 4);
  for (const std::string name : {"a.npy", "a.csv", "a-idx3-ubyte.gz"}) {
    SCOPED_TRACE(name);
    const std::string path = dir.file(name);
    const std::string text = name == "a.npy" ? npy(rows, cols, v) : name == "a.csv" ? csv(cols, v, false) : "";
    if (text.empty()) write_gz(path, idx(0x08, rows, cols, v));
    else write(path, text);
    const knn::DataFileInfo info = knn::inspect_data_file(path, cols);
    fs::resize_file(path, fs::file_size(path) - 5);
    std::vector<float> out(rows * cols);
    const std::string e = error_of([&] { knn::read_data_rows(info, 0, 1, out.data()); });
    EXPECT_EQ(e.rfind(path + ": ", 0), 0u) << e;
    EXPECT_NE(e.find("the file changed since"), std::string::npos) << e;
  }
}

}  // namespace

namespace {
// CSV problems that read as something else before: each message says what it is.
TEST(CsvMessages, ATrailingCommaABomAndAFirstLineOfTextAndNumbersSayWhatTheyAre) {
  Dir dir;
  struct Case {
    const char* name;
    std::string text, says;
  };
  const std::vector<Case> cases = {
      {"comma.csv", "1,2,\n3,4,\n", ":1:4: a trailing comma after the last value: a line must end with its last number, not ','"},
      {"comma_space.csv", "1,2\n3,4 , \n", ":2:5: a trailing comma after the last value"},
      {"bom.csv", "\xEF\xBB\xBF" "1,2\n3,4\n", ":1:1: the file starts with a UTF-8 byte order mark (BOM, bytes EF BB BF)"},
      {"bom_header.csv", "\xEF\xBB\xBF" "a,b\n3,4\n", ":1:1: the file starts with a UTF-8 byte order mark"},
      {"mixed.csv", "1,y,3\n3,4,5\n", ":1:3: line 1 holds text (\"y\") beside numbers: expected a header line, whose fields are all text (it is skipped), or a row of numbers"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.file(c.name);
    write(path, c.text);
    const std::string e = error_of([&] { knn::inspect_data_file(path, 0); });
    EXPECT_EQ(e.rfind(path + c.says, 0), 0u) << c.name << ": " << e;
  }
  // A header of text alone is still a header; a comma alone or a blank line is no trailing comma.
  write(dir.file("h.csv"), "a,b\n1,2\n\n");
  EXPECT_EQ(knn::inspect_data_file(dir.file("h.csv"), 0).rows, 1u);
}
}  // namespace
