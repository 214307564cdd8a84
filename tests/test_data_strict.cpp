// Strict data readers (issue 43): an IDX file whose name and content disagree about gzip, junk after a
// gzip stream, a ground truth too shallow for its case (HDF5 "neighbors" and .npy alike, found when
// the matrix is loaded, before any case runs, and by --list), neighbour indices beyond int32 and
// float64 values beyond float32 named as the file holds them, CSV files in another dialect, and the
// ad-hoc case's topk named by its flags. Every file is written here, tiny, and read by the real readers.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "test_support.hpp"
#include "core/errors.hpp"
#include "datafile.hpp"
#include "matrix.hpp"

#if KNN_HAVE_HDF5
#include <hdf5.h>
#endif

namespace {

namespace fs = std::filesystem;

// A temporary folder of its own (tests/test_support.hpp).
struct Dir : knn::testing::TempFolder {
  Dir() : TempFolder("knn_data_strict") {}
};

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes; }
void append(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary | std::ios::app) << bytes; }

std::string gzip(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, uLong(bytes.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = uInt(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string be32(std::uint32_t x) { return {char(x >> 24), char(x >> 16), char(x >> 8), char(x)}; }

// An IDX file of unsigned bytes: 3 items of 2 × 2 values.
std::string idx_bytes() {
  std::string s{'\0', '\0', char(0x08), char(3)};
  for (std::uint32_t d : {3u, 2u, 2u}) s += be32(d);
  for (int i = 0; i < 12; ++i) s += char(i * 19);
  return s;
}
std::vector<float> idx_values() {
  std::vector<float> v;
  for (int i = 0; i < 12; ++i) v.push_back(float(static_cast<unsigned char>(char(i * 19))));
  return v;
}

std::vector<float> read_file(const std::string& path, std::uint64_t raw_cols = 0) {
  const knn::DataFileInfo info = knn::inspect_data_file(path, raw_cols);
  std::vector<float> v(info.rows * info.cols);
  knn::read_data_file(info, v.data());
  return v;
}

// The message of the ConfigError that inspecting (and reading) `path` throws; "" when accepted.
std::string refusal(const std::string& path, std::uint64_t raw_cols = 0) {
  try {
    read_file(path, raw_cols);
  } catch (const knn::ConfigError& e) {
    return e.what();
  }
  return "";
}

// The program on `args`: its exit code and output (stdout and stderr).
knn::testing::Run knnbench(const std::string& args) { return knn::testing::run(std::string("'") + KNN_BINARY + "'", args); }

// A matrix in `dir` of the given case objects (JSON text).
std::string matrix(const Dir& dir, const std::string& cases) {
  const std::string path = dir.file("m.json");
  write(path, fmt::format(R"({{"schema_version":1,"cases":[{}]}})", cases));
  return path;
}

const std::string kFast = " --version v0 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 ";

template <class T>
std::string npy(std::size_t rows, std::size_t cols, const std::vector<T>& v, const char* descr) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}", descr, rows, cols);
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::string s = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 0xff) + char(header.size() >> 8) + header;
  s.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  return s;
}
std::string npy_i4(std::size_t rows, std::size_t cols, const std::vector<std::int32_t>& v) { return npy(rows, cols, v, "<i4"); }

// ---------------------------------------------------------------- IDX and gzip

TEST(DataStrictIdx, ANameEndingInGzMustHoldGzipAndGzipMustBeNamedGz) {
  Dir d;
  // The same bytes, named as they are: both read to the values written.
  write(d.file("good-idx3-ubyte.gz"), gzip(idx_bytes()));
  write(d.file("good-idx3-ubyte"), idx_bytes());
  EXPECT_EQ(read_file(d.file("good-idx3-ubyte.gz")), idx_values());
  EXPECT_EQ(read_file(d.file("good-idx3-ubyte")), idx_values());

  // Plain bytes named .gz, and gzip named without: refused, saying which and why.
  write(d.file("plain-idx3-ubyte.gz"), idx_bytes());
  std::string msg = refusal(d.file("plain-idx3-ubyte.gz"));
  EXPECT_EQ(msg.rfind(d.file("plain-idx3-ubyte.gz") + ": byte 0: 0x00 0x00 is not gzip's magic 0x1f 0x8b, but the name ends in .gz", 0), 0u) << msg;
  write(d.file("packed-idx3-ubyte"), gzip(idx_bytes()));
  msg = refusal(d.file("packed-idx3-ubyte"));
  EXPECT_NE(msg.find("packed-idx3-ubyte: byte 0: gzip's magic 0x1f 0x8b in a file whose name does not end in .gz"), std::string::npos) << msg;
  write(d.file("empty-idx3-ubyte.gz"), "");
  EXPECT_NE(refusal(d.file("empty-idx3-ubyte.gz")).find("empty file: expected gzip-compressed IDX data"), std::string::npos);

  // The matrix refuses it at load, --list too, exit 2 naming the file.
  const auto r = knnbench("--config '" + matrix(d, R"({"id":1,"k":4,"m":2,"n":3,"references_file":"plain-idx3-ubyte.gz"})") + "' --list");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("plain-idx3-ubyte.gz: byte 0: 0x00 0x00 is not gzip's magic"), std::string::npos) << r.out;
}

TEST(DataStrictIdx, AnythingAfterTheGzipStreamIsRefusedNamingItsOffsetAnotherMemberIsRead) {
  Dir d;
  const std::string gz = gzip(idx_bytes());
  const std::string path = d.file("t-idx3-ubyte.gz");
  for (const std::string junk : {std::string("JUNK"), std::string(512, '\0'), std::string("\x1f", 1)}) {
    write(path, gz + junk);
    const std::string msg = refusal(path);
    EXPECT_NE(msg.find(fmt::format("{}: byte {}: {} bytes after the end of the gzip stream (after 28 decompressed bytes), starting 0x{:02x}", path,
                                   gz.size(), junk.size(), static_cast<unsigned char>(junk[0]))),
              std::string::npos)
        << msg;
  }
  // Two gzip members (gzip -c a b > ab) are one stream of their bytes, as gunzip reads them.
  const std::string bytes = idx_bytes();
  write(path, gzip(bytes.substr(0, 10)) + gzip(bytes.substr(10)));
  EXPECT_EQ(read_file(path), idx_values());
  // A cut stream is still "truncated", at the offset where it broke.
  write(path, gz.substr(0, gz.size() - 9));
  EXPECT_NE(refusal(path).find("the gzip stream stops at byte"), std::string::npos) << refusal(path);
  EXPECT_NE(refusal(path).find("the file is truncated or corrupt"), std::string::npos) << refusal(path);
}

// ---------------------------------------------------------------- ground truth

TEST(DataStrictTruth, AnNpyGroundTruthTooShallowIsRefusedWhenTheMatrixLoadsBeforeAnyCaseRuns) {
  Dir d;
  // Case 1 runs fine; case 2's ground truth has 4 columns, its topk is 5. The run must not start case 1.
  std::vector<std::int32_t> idx(6 * 4);
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = std::int32_t(i % 4);
  write(d.file("t.npy"), npy_i4(6, 4, idx));
  const std::string cases = R"({"id":1,"k":3,"m":6,"n":20},{"id":2,"k":3,"m":6,"n":20,"topk":5,"ground_truth_file":"t.npy"})";
  const std::string expected = "/cases/1/ground_truth_file: case 2: ground truth: " + d.file("t.npy") +
                               ": 6 rows of 4 neighbour indices: expected m = 6 rows of at least topk = 5";
  for (const std::string how : {std::string(" --list"), kFast + "--json '" + d.file("o.json") + "'"}) {
    const auto r = knnbench("--config '" + matrix(d, cases) + "'" + how);
    EXPECT_EQ(r.code, 2) << how << r.out;
    EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("v0"), std::string::npos) << "no case ran:\n" << r.out;
    EXPECT_FALSE(fs::exists(d.file("o.json")));
  }
  // Rows too: one per query.
  write(d.file("t.npy"), npy_i4(5, 4, std::vector<std::int32_t>(20, 0)));
  const auto r = knnbench("--config '" + matrix(d, R"({"id":2,"k":3,"m":6,"n":20,"topk":2,"ground_truth_file":"t.npy"})") + "' --list");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("t.npy: 5 rows of 4 neighbour indices: expected m = 6 rows of at least topk = 2"), std::string::npos) << r.out;
  // Deep enough: listed.
  write(d.file("t.npy"), npy_i4(6, 4, idx));
  EXPECT_EQ(knnbench("--config '" + matrix(d, R"({"id":2,"k":3,"m":6,"n":20,"topk":4,"ground_truth_file":"t.npy"})") + "' --list").code, 0);
}

// Validation compares an answer with the ground truth by distance, rank by rank (each row's true
// distances sorted), never index by index: neighbours at equal distances may come in any order, in
// the answer and in the ground truth. So a ground-truth file that lists equal-distance neighbours out
// of index order (5, 3, 2 at distance 1; 3 before 1 at 32) is accepted and v0 passes against it, and
// a ground truth that is wrong (a far point in place of a tie) still fails v0: the file is used.
TEST(DataStrictTruth, EqualDistanceNeighboursInAnyIndexOrderAreAcceptedAWrongOneStillFails) {
  Dir d;
  const std::vector<float> q{0, 0, 5, 4}, r{5, 5, 1, 0, 0, 1, 1, 0, 9, 9, 0, -1};  // r1 = r3; q0 is 1 from r1, r2, r3, r5
  write(d.file("q.npy"), npy(2, 2, q, "<f4"));
  write(d.file("r.npy"), npy(6, 2, r, "<f4"));
  const std::string cases = R"({"id":7,"k":2,"m":2,"n":6,"topk":3,"queries_file":"q.npy","references_file":"r.npy","ground_truth_file":"t.npy"})";
  write(d.file("t.npy"), npy_i4(2, 3, {5, 3, 2, 0, 3, 1}));
  const auto ties = knnbench("--config '" + matrix(d, cases) + "'" + kFast + "--quiet --json '" + d.file("ties.json") + "'");
  EXPECT_EQ(ties.code, 0) << ties.out;
  std::ifstream in(d.file("ties.json"));
  const auto doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["results"][0]["status"], "pass") << doc["results"][0].dump();
  EXPECT_NE(doc["results"][0]["validation"]["ground_truth"].get<std::string>().find("t.npy"), std::string::npos) << doc["results"][0].dump();
  write(d.file("t.npy"), npy_i4(2, 3, {5, 3, 0, 0, 3, 1}));  // r0 is 50 away from q0, not a neighbour
  const auto wrong = knnbench("--config '" + matrix(d, cases) + "'" + kFast + "--quiet --json '" + d.file("wrong.json") + "'");
  EXPECT_EQ(wrong.code, 1) << wrong.out;
}

#if KNN_HAVE_HDF5
template <class T>
void h5_write(hid_t file, const char* name, hid_t type, const std::vector<hsize_t>& dims, const std::vector<T>& v) {
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(ds);
  H5Sclose(space);
}

// ann-benchmarks' layout, m = 6 queries against n = 20 points of k = 3; neighbours of `depth` columns, any integer type.
template <class T = std::int32_t>
void write_ann(const std::string& path, int depth, hid_t neighbor_type = H5T_NATIVE_INT32, std::vector<T> neighbors = {}) {
  std::vector<float> train(20 * 3), test(6 * 3);
  for (std::size_t i = 0; i < train.size(); ++i) train[i] = float(i % 7) * 0.25f;
  for (std::size_t i = 0; i < test.size(); ++i) test[i] = float(i % 5) * 0.5f;
  if (neighbors.empty())
    for (int i = 0; i < 6 * depth; ++i) neighbors.push_back(T(i % 20));
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  h5_write(f, "train", H5T_NATIVE_FLOAT, {20, 3}, train);
  h5_write(f, "test", H5T_NATIVE_FLOAT, {6, 3}, test);
  h5_write(f, "neighbors", neighbor_type, {6, hsize_t(depth)}, neighbors);
  H5Fclose(f);
}

const std::string kAnnCase = R"({"id":4,"k":3,"m":6,"n":20,"topk":5,"queries_file":"a.hdf5:test","references_file":"a.hdf5:train"})";

TEST(DataStrictTruth, AnHdf5NeighborsTooShallowIsRefusedInTheNpyWordsAtLoadAndInList) {
  Dir d;
  write_ann(d.file("a.hdf5"), 4);
  std::vector<std::int32_t> idx(6 * 4, 0);
  write(d.file("t.npy"), npy_i4(6, 4, idx));
  const std::string words = "6 rows of 4 neighbour indices: expected m = 6 rows of at least topk = 5";
  // The library's readers: one wording for both formats.
  std::vector<std::int32_t> out;
  for (const std::string path : {d.file("a.hdf5:test"), d.file("t.npy")}) {
    const std::string shown = path == d.file("t.npy") ? path : d.file("a.hdf5:neighbors");
    for (int read = 0; read < 2; ++read) {
      try {
        if (read) knn::read_ground_truth(path, 6, 20, 5, out);
        else knn::inspect_ground_truth(path, 6, 5);
        ADD_FAILURE() << path << ": accepted";
      } catch (const knn::ConfigError& e) {
        EXPECT_EQ(std::string(e.what()), shown + ": " + words);
      }
    }
  }
  // The matrix: refused when loaded, by --list as by a run, naming the case and the file.
  for (const std::string how : {std::string(" --list"), kFast}) {
    const auto r = knnbench("--config '" + matrix(d, kAnnCase) + "'" + how);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("/cases/0/queries_file: case 4: ground truth: " + d.file("a.hdf5:neighbors") + ": " + words), std::string::npos) << r.out;
  }
  // Deep enough, or no "neighbors" at all: the case runs and passes.
  write_ann(d.file("a.hdf5"), 5);
  EXPECT_TRUE(knn::inspect_ground_truth(d.file("a.hdf5:test"), 6, 5));
  EXPECT_EQ(knnbench("--config '" + matrix(d, kAnnCase) + "' --list").code, 0);
}

TEST(DataStrictTruth, Hdf5NeighbourIndicesBeyondInt32AreNamedAsTheFileHoldsThem) {
  Dir d;
  std::vector<std::int32_t> out;
  struct Bad {
    std::int64_t value;
    const char* said;
  };
  for (const Bad& b : {Bad{3000000000LL, "index 3000000000"}, Bad{-5, "index -5"}, Bad{std::int64_t(1) << 40, "index 1099511627776"}, Bad{20, "index 20"}}) {
    std::vector<std::int64_t> nb(6 * 5, 1);
    nb[2 * 5 + 3] = b.value;
    write_ann(d.file("a.hdf5"), 5, H5T_NATIVE_INT64, nb);
    try {
      knn::read_ground_truth(d.file("a.hdf5:test"), 6, 20, 5, out);
      ADD_FAILURE() << b.value << ": accepted";
    } catch (const knn::ConfigError& e) {
      EXPECT_EQ(std::string(e.what()), d.file("a.hdf5:neighbors") + ": row 2 column 3: " + b.said + ": expected an index in [0, 20)");
    }
  }
  // Unsigned 64-bit, beyond int64 too.
  std::vector<std::uint64_t> nb(6 * 5, 1);
  nb[7] = ~std::uint64_t(0);
  write_ann(d.file("a.hdf5"), 5, H5T_NATIVE_UINT64, nb);
  try {
    knn::read_ground_truth(d.file("a.hdf5:test"), 6, 20, 5, out);
    ADD_FAILURE() << "accepted";
  } catch (const knn::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("row 1 column 2: index 18446744073709551615:"), std::string::npos) << e.what();
  }
  // int64 indices in range: read as they are.
  std::vector<std::int64_t> good(6 * 5);
  for (std::size_t i = 0; i < good.size(); ++i) good[i] = std::int64_t(19 - i % 20);
  write_ann(d.file("a.hdf5"), 5, H5T_NATIVE_INT64, good);
  ASSERT_TRUE(knn::read_ground_truth(d.file("a.hdf5:test"), 6, 20, 4, out));
  ASSERT_EQ(out.size(), 24u);
  for (int q = 0; q < 6; ++q)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(out[q * 4 + j], good[q * 5 + j]);
}

TEST(DataStrictHdf5, AFloat64BeyondFloat32IsSaidToOverflowNotToBeInfinite) {
  Dir d;
  std::vector<double> v(4 * 2, 0.5);
  v[5] = 1e300;
  const hid_t f = H5Fcreate(d.file("b.hdf5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  h5_write(f, "train", H5T_NATIVE_DOUBLE, {4, 2}, v);
  v[5] = -HUGE_VAL;
  h5_write(f, "inf", H5T_NATIVE_DOUBLE, {4, 2}, v);
  v[5] = 3.0e38;  // within float32: read
  h5_write(f, "big", H5T_NATIVE_DOUBLE, {4, 2}, v);
  H5Fclose(f);
  std::string msg = refusal(d.file("b.hdf5:train"));
  EXPECT_EQ(msg.rfind(d.file("b.hdf5:train") + ": 1e+300 in dataset \"train\" (row 2, coordinate 1) overflows float32", 0), 0u) << msg;
  EXPECT_EQ(msg.find("Inf"), std::string::npos) << msg;
  msg = refusal(d.file("b.hdf5:inf"));
  EXPECT_NE(msg.find("-Inf in dataset \"inf\" (row 2, coordinate 1): expected finite values"), std::string::npos) << msg;
  EXPECT_EQ(read_file(d.file("b.hdf5:big"))[5], 3.0e38f);
}
#endif

// ---------------------------------------------------------------- CSV

TEST(DataStrictCsv, AnotherDialectIsNamedWithTheDelimiterAndLineEndsExpectedAndTheHeaderTaken) {
  Dir d;
  struct Bad {
    const char* name;
    std::string text;
    const char* where;  // line:column
    const char* why;
    bool header;        // line 1 was taken as a header, and the message says so
  };
  const std::string expected = "expected numbers separated by ',', one row per line, lines ending in \\n or \\r\\n";
  const Bad bad[] = {
      {"semi.csv", "1;2;3\n4;5;6\n7;8;9\n", ":2:2:", "';' between values: fields must be separated by ',' (not ';')", true},
      {"semi-header.csv", "x;y\n1;2\n", ":2:2:", "';' between values", true},
      {"tab.csv", "1\t2\t3\n4\t5\t6\n", ":2:2:", "a tab between values: fields must be separated by ','", true},
      {"quoted.csv", "\"1\",\"2\"\n\"3\",\"4\"\n", ":2:1:", "a quote (\"): values must be unquoted numbers", true},
      {"single.csv", "1,2\n3,'4'\n", ":2:3:", "a quote ('): values must be unquoted numbers", false},
      {"cr.csv", "1,2\r3,4\r5,6\r", ":1:4:", "a carriage return (CR) inside the line: lines must end in \\n or \\r\\n (CR alone, old Mac line ends, does not end a line)", false},
      {"cr-header.csv", "x,y\r3,4\r", ":1:4:", "a carriage return (CR) inside the line", false},
  };
  for (const Bad& b : bad) {
    write(d.file(b.name), b.text);
    const std::string msg = refusal(d.file(b.name));
    EXPECT_EQ(msg.rfind(d.file(b.name) + b.where + " " + b.why, 0), 0u) << b.name << ": " << msg;
    EXPECT_NE(msg.find(expected), std::string::npos) << b.name << ": " << msg;
    EXPECT_EQ(msg.find("was taken as a header") != std::string::npos, b.header) << b.name << ": " << msg;
  }
  // Good dialects still read: CRLF, spaces around values, a header.
  write(d.file("good.csv"), "a,b\r\n1, 2\r\n 3 ,4\r\n");
  EXPECT_EQ(read_file(d.file("good.csv")), (std::vector<float>{1, 2, 3, 4}));
  // A shape that is not the case's says how the file was read, and that line 1 was a header.
  const auto r = knnbench("--config '" + matrix(d, R"({"id":1,"k":2,"m":3,"n":4,"queries_file":"good.csv"})") + "' --list");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("good.csv: 2 rows of 2 floats: expected m = 3 rows of k = 2 (read as CSV, " + expected +
                       "; line 1, which holds no number, was taken as a header)"),
            std::string::npos)
      << r.out;
  // A value beyond float32 says it overflows float32.
  write(d.file("big.csv"), "1,1e300\n");
  const std::string msg = refusal(d.file("big.csv"));
  EXPECT_NE(msg.find(":1:3: \"1e300\" (row 0, coordinate 1) overflows float32"), std::string::npos) << msg;
}

// ---------------------------------------------------------------- the ad-hoc case

TEST(DataStrictAdhoc, TopkBeyondNNamesTheFlagsNotTheMatrixPath) {
  struct Bad {
    std::map<std::string, std::string> flags;
    const char* said;
  };
  const Bad bad[] = {
      {{{"k", "3"}, {"n", "1"}, {"self_join", "true"}},
       "--topk: 1 (the default): expected topk ≤ n − 1 = 0 (--n 1 --self-join: a self-join excludes the point itself): give a larger --n or a smaller --topk"},
      {{{"k", "3"}, {"n", "5"}, {"self_join", "true"}, {"topk", "5"}}, "--topk: 5: expected topk ≤ n − 1 = 4 (--n 5 --self-join: "},
      {{{"k", "3"}, {"m", "2"}, {"n", "4"}, {"topk", "9"}}, "--topk: 9: expected topk ≤ n = 4 (--n 4): give a larger --n or a smaller --topk"},
      {{{"k", "3"}, {"m", "2"}, {"n", "4"}, {"topk", "0"}}, "--topk: 0: expected a neighbour count"},
  };
  for (const Bad& b : bad) {
    try {
      knn::adhoc_matrix(b.flags);
      ADD_FAILURE() << b.said << ": accepted";
    } catch (const knn::ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind(b.said, 0), 0u) << msg;
      EXPECT_EQ(msg.find("/defaults"), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(knn::adhoc_matrix({{"k", "3"}, {"n", "2"}, {"self_join", "true"}}).cases[0].topk, 1);
  // Through the program's flags.
  const auto r = knnbench("--k 3 --n 1 --self-join --list");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--topk: 1 (the default): expected topk ≤ n − 1 = 0 (--n 1 --self-join: "), std::string::npos) << r.out;
}

}  // namespace
