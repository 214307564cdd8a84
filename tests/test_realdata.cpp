// Real datasets' formats: IDX (gzipped or not) and HDF5 (ann-benchmarks' layout, with its
// "neighbors" ground truth), and a case whose data file is missing. Every file is written here,
// tiny; good ones round-trip to the values written, bad ones exit 2 naming the file and the reason.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "datafile.hpp"
#include "file_bytes.hpp"
#include "test_support.hpp"

#if KNN_HAVE_HDF5
#include <hdf5.h>
#endif

namespace {

namespace fs = std::filesystem;

// A temporary folder of its own (tests/test_support.hpp).
struct Dir : knn::testing::TempFolder {
  Dir() : TempFolder("knn_realdata") {}
};

using knn::testing::be32;
using knn::testing::write;
using knn::testing::write_gz;

// An IDX file: magic 0 0 type ndims, big-endian sizes, then the elements.
std::string idx(unsigned type, const std::vector<std::uint32_t>& dims, const std::string& data) {
  std::string s{'\0', '\0', char(type), char(dims.size())};
  for (auto d : dims) s += be32(d);
  return s + data;
}

std::string bytes_0_to(std::size_t count) {
  std::string s(count, '\0');
  for (std::size_t i = 0; i < count; ++i) s[i] = char((i * 37) % 256);
  return s;
}

struct ProgramRun {
  int code;
  std::string out;
};

ProgramRun knnbench(const std::string& args, const Dir& dir) {
  const std::string out = dir.file("out.txt");
  const int status = std::system((std::string("'") + KNN_BINARY + "' " + args + " >'" + out + "' 2>&1").c_str());
  std::ifstream in(out);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), std::string(std::istreambuf_iterator<char>(in), {})};
}

// A one-case matrix in `dir`; extra is more JSON fields of the case.
std::string matrix(const Dir& dir, int k, int m, int n, int topk, const std::string& extra) {
  const std::string path = dir.file("m.json");
  write(path, fmt::format(R"({{"schema_version":1,"cases":[{{"id":7,"k":{},"m":{},"n":{},"topk":{},{}}}]}})", k, m, n, topk, extra));
  return path;
}

const std::string kFast = " --version v0 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 ";

std::vector<float> read_file(const std::string& path, std::uint64_t raw_cols = 0) {
  const knn::DataFileInfo info = knn::inspect_data_file(path, raw_cols);
  std::vector<float> v(info.rows * info.cols);
  knn::read_data_file(info, v.data());
  return v;
}

// ---------------------------------------------------------------- IDX

TEST(RealDataIdx, ImagesAndLabelsRoundTripGzippedOrNot) {
  Dir d;
  const std::string pixels = bytes_0_to(5 * 4 * 3);
  write_gz(d.file("train-images-idx3-ubyte.gz"), idx(0x08, {5, 4, 3}, pixels));
  write(d.file("train-images-idx3-ubyte"), idx(0x08, {5, 4, 3}, pixels));
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"}) {
    const auto info = knn::inspect_data_file(d.file(name), 0);
    EXPECT_EQ(info.format, knn::DataFormat::idx);
    EXPECT_EQ(info.rows, 5u);
    EXPECT_EQ(info.cols, 12u) << "28x28 images are k = 784; 4x3 ones are k = 12";
    const auto v = read_file(d.file(name));
    ASSERT_EQ(v.size(), pixels.size());
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], float(static_cast<unsigned char>(pixels[i]))) << name << " value " << i;
  }
  // Labels: idx1, one value per item, read as k = 1.
  write_gz(d.file("train-labels-idx1-ubyte.gz"), idx(0x08, {6}, std::string{0, 9, 3, 3, 7, 1}));
  EXPECT_EQ(read_file(d.file("train-labels-idx1-ubyte.gz")), (std::vector<float>{0, 9, 3, 3, 7, 1}));
  // float32 elements, big-endian.
  std::string f;
  for (float x : {1.5f, -2.25f, 1e-3f, 7.0f}) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, 4);
    f += be32(bits);
  }
  write(d.file("floats.idx"), idx(0x0D, {2, 2}, f));
  EXPECT_EQ(read_file(d.file("floats.idx")), (std::vector<float>{1.5f, -2.25f, 1e-3f, 7.0f}));
}

struct BadIdx {
  const char* name;
  std::function<void(const std::string&)> make;
  const char* reason;
};

TEST(RealDataIdx, BadFilesExit2NamingTheFileAndTheReason) {
  const std::string good = idx(0x08, {3, 2, 2}, bytes_0_to(12));
  const std::vector<BadIdx> bad{
      {"truncated-idx3-ubyte", [&](auto p) { write(p, good.substr(0, good.size() - 5)); }, "short file: 7 bytes of data after the 16-byte header: expected 12"},
      {"truncated-idx3-ubyte.gz",
       [&](auto p) {
         write_gz(p, idx(0x08, {3, 2, 2}, bytes_0_to(12)));
         fs::resize_file(p, fs::file_size(p) - 12);  // cuts the deflate stream and its trailer
       },
       "the file is truncated or corrupt"},
      {"magic-idx3-ubyte", [&](auto p) { write(p, "P5\n" + good); }, "not an IDX file"},
      {"dtype-idx3-ubyte", [&](auto p) { write(p, idx(0x0C, {3, 2, 2}, bytes_0_to(48))); }, "element type 0x0c (int32): expected 0x08"},
      {"dims-idx3-ubyte", [&](auto p) { write(p, idx(0x08, {3, 2, 2}, bytes_0_to(15))); }, "the dimensions do not match the data"},
      {"empty-idx3-ubyte.gz", [&](auto p) { write_gz(p, idx(0x08, {0, 2, 2}, "")); }, "0 items: expected at least one"},
  };
  for (const BadIdx& b : bad) {
    Dir d;
    const std::string path = d.file(b.name);
    b.make(path);
    try {
      knn::inspect_data_file(path, 0);
      ADD_FAILURE() << b.name << ": accepted";
    } catch (const knn::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.reason), std::string::npos) << b.name << ": " << e.what();
    }
    const ProgramRun r = knnbench("--config '" + matrix(d, 4, 3, 3, 1, fmt::format(R"("references_file":"{}")", b.name)) + "' --list", d);
    EXPECT_EQ(r.code, 2) << b.name << ": " << r.out;
    EXPECT_NE(r.out.find(b.name), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(b.reason), std::string::npos) << r.out;
  }
}

TEST(RealDataIdx, AShapeThatIsNotTheCasesExits2AndAGoodOneRunsAndValidates) {
  Dir d;
  write_gz(d.file("q-idx3-ubyte.gz"), idx(0x08, {4, 2, 3}, bytes_0_to(24)));
  write_gz(d.file("r-idx3-ubyte.gz"), idx(0x08, {9, 2, 3}, bytes_0_to(54).substr(0, 54)));
  const std::string files = R"("queries_file":"q-idx3-ubyte.gz","references_file":"r-idx3-ubyte.gz")";
  ProgramRun r = knnbench("--config '" + matrix(d, 7, 4, 9, 2, files) + "' --list", d);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("4 rows of 6 floats: expected m = 4 rows of k = 7"), std::string::npos) << r.out;
  r = knnbench("--config '" + matrix(d, 6, 4, 9, 2, files) + "'" + kFast + "--json '" + d.file("o.json") + "'", d);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
  EXPECT_EQ(j["results"][0]["status"], "pass");
  EXPECT_EQ(j["results"][0]["validation"]["ground_truth"], "v0 reference");
}

// ---------------------------------------------------------------- a missing data file

TEST(RealDataMissing, ACaseThatSaysHowToFetchItsFileIsSkippedWithTheCommandOthersExit2) {
  Dir d;
  ProgramRun r = knnbench("--config '" + matrix(d, 3, 4, 9, 1, R"("references_file":"../nowhere/cities.npy","fetch":"scripts/setup/fetch-data.sh cities")") + "'" +
                       kFast + "--json '" + d.file("o.json") + "'",
                   d);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
  EXPECT_EQ(j["results"][0]["status"], "skip");
  const std::string reason = j["results"][0]["reason"];
  EXPECT_NE(reason.find("nowhere/cities.npy not found"), std::string::npos) << reason;
  EXPECT_NE(reason.find("scripts/setup/fetch-data.sh cities"), std::string::npos) << reason;
  r = knnbench("--config '" + matrix(d, 3, 4, 9, 1, R"("references_file":"../nowhere/cities.npy")") + "' --list", d);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("no such file"), std::string::npos) << r.out;
}

// ---------------------------------------------------------------- a ground-truth .npy file

std::string npy(const char* descr, std::size_t rows, std::size_t cols, const void* data) {
  std::string h = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}", descr, rows, cols);
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + char(h.size() & 0xff) + char(h.size() >> 8) + h +
         std::string(static_cast<const char*>(data), rows * cols * 4);
}

TEST(RealDataTruth, AGroundTruthFileValidatesEveryQueryAndAWrongOneFails) {
  Dir d;
  const int k = 2, m = 6, n = 30, topk = 2;
  std::vector<float> refs, queries;
  for (int i = 0; i < n * k; ++i) refs.push_back(float((i * 7919) % 101));
  for (int i = 0; i < m * k; ++i) queries.push_back(float((i * 104729) % 97) + 0.5f);
  std::vector<std::int32_t> truth;
  for (int q = 0; q < m; ++q) {
    std::vector<std::pair<double, int>> all;
    for (int r = 0; r < n; ++r) {
      const double dx = queries[q * k] - refs[r * k], dy = queries[q * k + 1] - refs[r * k + 1];
      all.push_back({dx * dx + dy * dy, r});
    }
    std::sort(all.begin(), all.end());
    for (int j = 0; j < 3; ++j) truth.push_back(all[j].second);  // 3 columns: more than topk is fine
  }
  write(d.file("r.npy"), npy("<f4", n, k, refs.data()));
  write(d.file("q.npy"), npy("<f4", m, k, queries.data()));
  write(d.file("t.npy"), npy("<i4", m, 3, truth.data()));
  // Without ground_truth_file an .npy queries file is no ground truth: v0 alone.
  ProgramRun r = knnbench("--config '" + matrix(d, k, m, n, topk, R"("queries_file":"q.npy","references_file":"r.npy")") + "'" + kFast + "--json '" +
                              d.file("o.json") + "'",
                          d);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(d.file("o.json")))["results"][0]["validation"]["ground_truth"], "v0 reference");
  const std::string files = R"("queries_file":"q.npy","references_file":"r.npy","ground_truth_file":"t.npy","validate_queries":2)";
  r = knnbench("--config '" + matrix(d, k, m, n, topk, files) + "'" + kFast + "--json '" + d.file("o.json") + "'", d);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
  EXPECT_EQ(j["results"][0]["validation"]["ground_truth"], "v0 reference (2 of 6 queries) + t.npy");
  EXPECT_EQ(j["results"][0]["validation"]["queries_checked"], m);
  std::swap(truth[3 * 4], truth[3 * 4 + 2]);  // query 4's nearest replaced by its third nearest
  write(d.file("t.npy"), npy("<i4", m, 3, truth.data()));
  r = knnbench("--config '" + matrix(d, k, m, n, topk, files) + "'" + kFast + "--json '" + d.file("o.json") + "'", d);
  EXPECT_EQ(r.code, 1) << r.out;
  j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
  EXPECT_NE(std::string(j["results"][0]["reason"]).find("query 4"), std::string::npos) << j["results"][0]["reason"];
  write(d.file("t.npy"), npy("<f4", m, 3, truth.data()));
  r = knnbench("--config '" + matrix(d, k, m, n, topk, files) + "'" + kFast + "--json '" + d.file("o.json") + "'", d);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("t.npy: dtype '<f4': expected little-endian int32"), std::string::npos) << r.out;
}

// ---------------------------------------------------------------- HDF5

#if KNN_HAVE_HDF5
template <class T>
void h5_write(hid_t file, const char* name, hid_t type, const std::vector<hsize_t>& dims, const std::vector<T>& v) {
  const hid_t space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (!v.empty()) H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(d);
  H5Sclose(space);
}

// ann-benchmarks' layout: train (n × k), test (m × k) float32, neighbors (m × K) int32 sorted by distance.
struct Ann {
  int k = 3, m = 5, n = 40, depth = 4;
  std::vector<float> train, test;
  std::vector<std::int32_t> neighbors;
  Ann() {
    std::mt19937 gen(11);
    std::uniform_real_distribution<float> u(0, 1);
    for (int i = 0; i < n * k; ++i) train.push_back(u(gen));
    for (int i = 0; i < m * k; ++i) test.push_back(u(gen));
    for (int q = 0; q < m; ++q) {
      std::vector<std::pair<double, int>> all;
      for (int r = 0; r < n; ++r) {
        double s = 0;
        for (int t = 0; t < k; ++t) s += double(test[q * k + t] - train[r * k + t]) * (test[q * k + t] - train[r * k + t]);
        all.push_back({s, r});
      }
      std::sort(all.begin(), all.end());
      for (int j = 0; j < depth; ++j) neighbors.push_back(all[j].second);
    }
  }
  // Published neighbours that disagree with the data: each query's list reversed, its nearest
  // replaced by a point that is not among its true nearest.
  Ann wrong_neighbors() const {
    Ann w = *this;
    for (int q = 0; q < m; ++q) std::reverse(w.neighbors.begin() + q * depth, w.neighbors.begin() + (q + 1) * depth);
    for (int q = 0; q < m; ++q) w.neighbors[q * depth] = (neighbors[q * depth + depth - 1] + 17) % n;
    return w;
  }
  void write(const std::string& path, bool with_neighbors = true) const {
    const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    h5_write(f, "train", H5T_NATIVE_FLOAT, {hsize_t(n), hsize_t(k)}, train);
    h5_write(f, "test", H5T_NATIVE_FLOAT, {hsize_t(m), hsize_t(k)}, test);
    if (with_neighbors) h5_write(f, "neighbors", H5T_NATIVE_INT32, {hsize_t(m), hsize_t(depth)}, neighbors);
    H5Fclose(f);
  }
};

const std::string kAnnCase = R"("queries_file":"a.hdf5:test","references_file":"a.hdf5:train")";

TEST(RealDataHdf5, TrainAndTestRoundTripAndTheFilesNeighborsValidateToo) {
  Dir d;
  const Ann a;
  a.write(d.file("a.hdf5"));
  EXPECT_EQ(read_file(d.file("a.hdf5:train")), a.train);
  EXPECT_EQ(read_file(d.file("a.hdf5:test")), a.test);
  ProgramRun r = knnbench("--config '" + matrix(d, a.k, a.m, a.n, 3, kAnnCase) + "'" + kFast + "--json '" + d.file("o.json") + "'", d);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
  EXPECT_EQ(j["results"][0]["status"], "pass") << j["results"][0]["reason"];
  EXPECT_EQ(j["results"][0]["validation"]["ground_truth"], "v0 reference + neighbors of a.hdf5");

  // Published neighbours that disagree with the data: the answer fails against them, and says so.
  a.wrong_neighbors().write(d.file("a.hdf5"));
  r = knnbench("--config '" + matrix(d, a.k, a.m, a.n, 3, kAnnCase) + "'" + kFast + "--json '" + d.file("o.json") + "'", d);
  EXPECT_EQ(r.code, 1) << r.out;
  j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
  EXPECT_EQ(j["results"][0]["status"], "fail");
  EXPECT_NE(std::string(j["results"][0]["reason"]).find("against v0 reference + neighbors of a.hdf5"), std::string::npos) << j["results"][0]["reason"];

  // No neighbors: v0 alone, recorded as such.
  a.write(d.file("a.hdf5"), false);
  r = knnbench("--config '" + matrix(d, a.k, a.m, a.n, 3, kAnnCase) + "'" + kFast + "--json '" + d.file("o.json") + "'", d);
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
  EXPECT_EQ(j["results"][0]["validation"]["ground_truth"], "v0 reference");
  // Neighbours too shallow for the case's topk: refused when the matrix loads, like a .npy ground truth
  // (tests/test_data_strict.cpp checks the wording).
  a.write(d.file("a.hdf5"));
  r = knnbench("--config '" + matrix(d, a.k, a.m, a.n, a.depth + 1, kAnnCase) + "'" + kFast + "--json '" + d.file("o.json") + "'", d);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("a.hdf5:neighbors: 5 rows of 4 neighbour indices: expected m = 5 rows of at least topk = 5"), std::string::npos) << r.out;
}

std::string slurp(const std::string& path) { return std::string(std::istreambuf_iterator<char>(std::ifstream(path).rdbuf()), {}); }

// Not only the reference: a CPU version is checked against the file's neighbours too, in a child
// process as well (--isolate reads each child's result back), and what it was checked against
// survives `report` and `compare`; wrong neighbours fail every version, exit 1, naming them.
TEST(RealDataHdf5, ACpuVersionIsCheckedAgainstTheFilesNeighborsAndReportAndCompareSaySo) {
  Dir d;
  const Ann a;
  a.write(d.file("a.hdf5"));
  const std::string run = "--config '" + matrix(d, a.k, a.m, a.n, 3, kAnnCase) + "' --version v0,v10 --warmup 0 --min-samples 1 --max-samples 1 --min-time 0 ";
  const std::string truth = "v0 reference + neighbors of a.hdf5";
  for (const std::string isolate : {"", "--isolate "}) {
    SCOPED_TRACE(isolate);
    const ProgramRun r = knnbench(run + isolate + "--json '" + d.file("o.json") + "'", d);
    ASSERT_EQ(r.code, 0) << r.out;
    std::string screen;  // lines wrapped at the screen's width, joined again
    for (char c : r.out) screen += std::isspace(static_cast<unsigned char>(c)) && !screen.empty() && screen.back() == ' ' ? "" : std::string(1, std::isspace(static_cast<unsigned char>(c)) ? ' ' : c);
    const std::size_t v10 = screen.find("case 7 v10 ");  // its result line says it, before the table
    ASSERT_NE(v10, std::string::npos) << r.out;
    EXPECT_LT(screen.find("(validated against " + truth + ")", v10), screen.find("Median wall time", v10)) << r.out;
    EXPECT_NE(r.out.find("Validated against " + truth + ": case 7."), std::string::npos) << r.out;
    const auto j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
    ASSERT_EQ(j["results"].size(), 2u);
    for (const auto& res : j["results"]) {
      EXPECT_EQ(res["status"], "pass") << res["version"] << ": " << res["reason"];
      EXPECT_EQ(res["validation"]["ground_truth"], truth) << res["version"];
    }
  }
  ProgramRun r = knnbench("report '" + d.file("o.json") + "' --md '" + d.file("o.md") + "' --csv '" + d.file("o.csv") + "'", d);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(slurp(d.file("o.md")).find("Validated against " + truth + ": case 7.\n"), std::string::npos) << slurp(d.file("o.md"));
  EXPECT_NE(slurp(d.file("o.csv")).find(",v10,tree,pass,"), std::string::npos) << slurp(d.file("o.csv"));
  EXPECT_NE(slurp(d.file("o.csv")).find("," + truth + ","), std::string::npos) << slurp(d.file("o.csv"));

  // The same data without neighbours: v0 alone, and compare says the two runs were checked differently.
  a.write(d.file("a.hdf5"), false);
  r = knnbench(run + "--json '" + d.file("v0.json") + "'", d);
  ASSERT_EQ(r.code, 0) << r.out;
  r = knnbench("compare '" + d.file("v0.json") + "' '" + d.file("o.json") + "' --md -", d);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("A against v0 reference, B against " + truth + ", for case 7 (v0, v10)."), std::string::npos) << r.out;

  a.wrong_neighbors().write(d.file("a.hdf5"));
  for (const std::string isolate : {"", "--isolate "}) {
    SCOPED_TRACE(isolate);
    r = knnbench(run + isolate + "--json '" + d.file("o.json") + "'", d);
    EXPECT_EQ(r.code, 1) << r.out;
    const auto j = nlohmann::json::parse(std::ifstream(d.file("o.json")));
    ASSERT_EQ(j["results"].size(), 2u);
    for (const auto& res : j["results"]) {
      EXPECT_EQ(res["status"], "fail") << res["version"];
      EXPECT_NE(std::string(res["reason"]).find("validation against " + truth + ": "), std::string::npos) << res["version"] << ": " << res["reason"];
    }
  }
}

TEST(RealDataHdf5, BadFilesExit2NamingTheFileAndTheReason) {
  const Ann a;
  struct Bad {
    const char* name;
    std::function<void(const std::string&)> make;
    const char* spec;
    const char* reason;
  };
  const std::vector<Bad> bad{
      {"truncated.hdf5",
       [&](auto p) {
         a.write(p);
         fs::resize_file(p, fs::file_size(p) / 2);
       },
       "truncated.hdf5:train", "truncated or corrupt"},
      {"magic.hdf5", [&](auto p) { write(p, "this is not HDF5 at all, just text\n"); }, "magic.hdf5:train", "not an HDF5 file"},
      {"dtype.hdf5",
       [&](auto p) {
         const hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
         h5_write(f, "train", H5T_NATIVE_INT32, {40, 3}, std::vector<std::int32_t>(120, 1));
         H5Fclose(f);
       },
       "dtype.hdf5:train", "holds integers: expected floating-point values"},
      {"dims.hdf5",
       [&](auto p) {
         const hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
         h5_write(f, "train", H5T_NATIVE_FLOAT, {120}, std::vector<float>(120, 1));
         H5Fclose(f);
       },
       "dims.hdf5:train", "is 1-D: expected 2-D"},
      {"shape.hdf5", [&](auto p) { a.write(p); }, "shape.hdf5:test", "5 rows of 3 floats: expected n = 40 rows of k = 3"},
      {"empty.hdf5",
       [&](auto p) {
         const hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
         h5_write(f, "train", H5T_NATIVE_FLOAT, {0, 3}, std::vector<float>{});
         H5Fclose(f);
       },
       "empty.hdf5:train", "has 0 rows: expected at least one"},
      {"nodataset.hdf5", [&](auto p) { a.write(p); }, "nodataset.hdf5:base", "no dataset \"base\""},
  };
  for (const Bad& b : bad) {
    Dir d;
    b.make(d.file(b.name));
    const ProgramRun r = knnbench("--config '" + matrix(d, 3, 5, 40, 1, fmt::format(R"("references_file":"{}")", b.spec)) + "' --list", d);
    EXPECT_EQ(r.code, 2) << b.name << ": " << r.out;
    EXPECT_NE(r.out.find(b.name), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(b.reason), std::string::npos) << b.name << ": " << r.out;
  }
}
#else
TEST(RealDataHdf5, WithoutHdf5AnHdf5FileIsRefusedSayingSo) {
  Dir d;
  write(d.file("a.hdf5"), "anything");
  const ProgramRun r = knnbench("--config '" + matrix(d, 3, 5, 40, 1, R"("references_file":"a.hdf5:train")") + "' --list", d);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("built without HDF5"), std::string::npos) << r.out;
  GTEST_SKIP() << "built without HDF5 (libhdf5-dev not found): the HDF5 reader's own tests do not run";
}
#endif

TEST(RealDataHdf5, APathWithoutADatasetIsRefused) {
  Dir d;
  const ProgramRun r = knnbench("--config '" + matrix(d, 3, 5, 40, 1, R"("references_file":"a.hdf5")") + "' --list", d);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("expected FILE.hdf5:DATASET"), std::string::npos) << r.out;
}

}  // namespace
