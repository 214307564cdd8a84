// Data files (.npy, .fvecs, .bin/.f32, .csv): good files round-trip to the floats written, bad
// ones are refused with one line naming the file and the byte offset or line:column that is
// wrong, the matrix checks each file's shape against its case, and a run through the binary reads
// them. Every file is written by the test into a temporary folder from fresh random floats.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "data.hpp"
#include "datafile.hpp"
#include "core/errors.hpp"
#include "matrix.hpp"
#include "report.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using knn::ConfigError;
using knn::DataFormat;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A fresh folder per test, removed afterwards.
struct TempFolder {
  fs::path path;
  TempFolder() {
    static int counter = 0;
    path = fs::temp_directory_path() / fmt::format("knn_datafiles_{}_{}", ::getpid(), counter++);
    fs::create_directories(path);
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::vector<float> random_floats(std::size_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> coord(-100.0f, 100.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = coord(gen);
  return v;
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string float_bytes(const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

std::string u32_bytes(std::uint32_t x) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = char((x >> (8 * i)) & 0xff);
  return s;
}

// An .npy preamble and header as NumPy writes it (padded to 64 bytes, ending in a newline).
std::string npy_header(const std::string& dict, int major = 1) {
  const std::size_t pre = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((pre + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + char(major) + '\0';
  if (major == 1) out += std::string{char(h.size() & 0xff), char(h.size() >> 8)};
  else out += u32_bytes(std::uint32_t(h.size()));
  return out + h;
}

std::string npy_dict(const std::string& shape, const std::string& descr = "'<f4'", const char* fortran = "False") {
  return fmt::format("{{'descr': {}, 'fortran_order': {}, 'shape': {}, }}", descr, fortran, shape);
}

std::string npy(std::uint64_t rows, std::uint64_t cols, const std::vector<float>& v, int major = 1) {
  return npy_header(npy_dict(fmt::format("({}, {})", rows, cols)), major) + float_bytes(v);
}

std::string fvecs(std::size_t dim, const std::vector<float>& v) {
  std::string s;
  for (std::size_t r = 0; r < v.size() / dim; ++r) {
    s += u32_bytes(std::uint32_t(dim));
    s += std::string(reinterpret_cast<const char*>(v.data() + r * dim), dim * 4);
  }
  return s;
}

// Shortest round-trip text for every float, so reading it back gives the same bits.
std::vector<std::string> csv_lines(std::size_t dim, const std::vector<float>& v, const char* sep = ",") {
  std::vector<std::string> lines;
  for (std::size_t r = 0; r < v.size() / dim; ++r) {
    std::string line;
    for (std::size_t c = 0; c < dim; ++c) line += fmt::format("{}{}", c ? sep : "", v[r * dim + c]);
    lines.push_back(line);
  }
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines, const char* eol = "\n") {
  std::string s;
  for (const auto& l : lines) s += l + eol;
  return s;
}

std::string error_of(const std::function<void()>& fn) { return knn::testing::config_error_of(fn); }

bool one_line(const std::string& m) {
  for (unsigned char c : m)
    if (c < 0x20) return false;
  return true;
}

// ---------------------------------------------------------------- good files

struct GoodFile {
  const char* name;
  DataFormat format;
  std::function<std::string(std::size_t rows, std::size_t dim, const std::vector<float>& v)> make;
};

std::vector<GoodFile> good_files() {
  return {
      {"a.npy", DataFormat::npy, [](auto r, auto d, const auto& v) { return npy(r, d, v, 1); }},
      {"v2.npy", DataFormat::npy, [](auto r, auto d, const auto& v) { return npy(r, d, v, 2); }},
      {"v3.npy", DataFormat::npy, [](auto r, auto d, const auto& v) { return npy(r, d, v, 3); }},
      {"python2.npy", DataFormat::npy,
       [](auto r, auto d, const auto& v) { return npy_header(fmt::format("{{\"descr\":\"<f4\",\"shape\":({}L,{}L),\"fortran_order\":False}}", r, d)) + float_bytes(v); }},
      {"a.fvecs", DataFormat::fvecs, [](auto, auto d, const auto& v) { return fvecs(d, v); }},
      {"a.bin", DataFormat::raw_f32, [](auto, auto, const auto& v) { return float_bytes(v); }},
      {"a.F32", DataFormat::raw_f32, [](auto, auto, const auto& v) { return float_bytes(v); }},
      {"a.csv", DataFormat::csv, [](auto, auto d, const auto& v) { return join_lines(csv_lines(d, v)); }},
      {"header.csv", DataFormat::csv,
       [](auto, auto d, const auto& v) {
         std::string h;
         for (std::size_t c = 0; c < d; ++c) h += fmt::format("{}x{}", c ? "," : "", c);
         return h + "\n" + join_lines(csv_lines(d, v));
       }},
      {"crlf_spaces_no_final_newline.csv", DataFormat::csv,
       [](auto, auto d, const auto& v) {
         std::string s = join_lines(csv_lines(d, v, " , "), "\r\n");
         return s.substr(0, s.size() - 2);
       }},
      {"trailing_blank_lines.csv", DataFormat::csv, [](auto, auto d, const auto& v) { return join_lines(csv_lines(d, v)) + "\n  \n"; }},
  };
}

TEST(DataFiles, EveryFormatRoundTripsRandomFloatsBitForBit) {
  TempFolder dir;
  unsigned seed = 1;
  for (const auto& g : good_files()) {
    for (const auto& [rows, dim] : std::vector<std::pair<std::size_t, std::size_t>>{{1, 1}, {7, 3}, {33, 16}, {1000, 2}}) {
      SCOPED_TRACE(fmt::format("{} rows={} dim={}", g.name, rows, dim));
      std::vector<float> v = random_floats(rows * dim, seed++);
      if (v.size() > 4) v[3] = -0.0f, v[4] = 1e-40f;  // a signed zero and a subnormal survive too
      const std::string path = dir.file(g.name);
      write_bytes(path, g.make(rows, dim, v));
      const knn::DataFileInfo info = knn::inspect_data_file(path, dim);
      EXPECT_EQ(info.format, g.format);
      ASSERT_EQ(info.rows, rows);
      ASSERT_EQ(info.cols, dim);
      std::vector<float> got(rows * dim, kNaN);
      knn::read_data_file(info, got.data());
      EXPECT_EQ(std::memcmp(got.data(), v.data(), v.size() * 4), 0);
      EXPECT_EQ(knn::checksum(got.data(), got.size()), knn::checksum(v.data(), v.size()));
    }
  }
}

TEST(DataFiles, CsvAcceptsExponentsPlusSignsAndRoundsTinyValuesToZero) {
  TempFolder dir;
  const std::string path = dir.file("forms.csv");
  write_bytes(path, "1e-05,+2.5,-3E+2\n.5,5.,1e-50\n");
  const auto info = knn::inspect_data_file(path, 0);
  ASSERT_EQ(info.rows, 2u);
  ASSERT_EQ(info.cols, 3u);
  std::vector<float> got(6);
  knn::read_data_file(info, got.data());
  EXPECT_EQ(got, (std::vector<float>{1e-05f, 2.5f, -300.0f, 0.5f, 5.0f, 0.0f}));
}

// Seen while writing the data-file fuzz target (by reading parse_float): 1e-50 rounded to zero, but
// 1e-400, below double's range too, was refused as "beyond float32 range". Only values beyond
// float32's largest are refused.
TEST(DataFiles, CsvValuesBelowDoublesRangeRoundToZeroToo) {
  TempFolder dir;
  const std::string path = dir.file("tiny.csv");
  write_bytes(path, "1e-400,-1e-99999999999999999999\n0." + std::string(400, '0') + "1,+2e-2147483648\n");
  const auto info = knn::inspect_data_file(path, 0);
  ASSERT_EQ(info.rows, 2u);
  ASSERT_EQ(info.cols, 2u);
  std::vector<float> got(4, kNaN);
  ASSERT_EQ(error_of([&] { knn::read_data_file(info, got.data()); }), "");
  EXPECT_EQ(std::memcmp(got.data(), std::vector<float>{0.0f, -0.0f, 0.0f, 0.0f}.data(), 16), 0);
  const std::vector<std::string> huge_values = {"1e400", "-1e99999999999999999999", "1" + std::string(400, '0'),
                                                "0." + std::string(400, '0') + "1e800"};
  for (const std::string& huge : huge_values) {
    SCOPED_TRACE(huge);
    write_bytes(path, "1," + huge + "\n");
    const auto i2 = knn::inspect_data_file(path, 0);
    std::vector<float> out(2);
    const std::string msg = error_of([&] { knn::read_data_file(i2, out.data()); });
    EXPECT_NE(msg.find(path + ":1:3: "), std::string::npos) << msg;
    EXPECT_NE(msg.find("beyond float32 range"), std::string::npos) << msg;
  }
}

// Found by fuzzing the readers: a CSV file of only a header has 0 rows, and reading it said
// "the file changed since it was inspected".
TEST(DataFiles, ACsvFileOfOnlyAHeaderReadsAsZeroRows) {
  TempFolder dir;
  const std::string path = dir.file("header_only.csv");
  for (const char* text : {"x,y\n", "x,y", "x\n\n  \n"}) {
    SCOPED_TRACE(text);
    write_bytes(path, text);
    const auto info = knn::inspect_data_file(path, 0);
    EXPECT_EQ(info.rows, 0u);
    std::vector<float> got;
    EXPECT_EQ(error_of([&] { knn::read_data_file(info, got.data()); }), "");
  }
}

TEST(DataFiles, AHeaderLineIsSkippedOnlyWhenNoFieldIsANumber) {
  TempFolder dir;
  const std::string path = dir.file("h.csv");
  write_bytes(path, "x,1\n2,3\n");  // "1" is a number: line 1 is no header, and "x" no number: refused saying so
  const std::string msg = error_of([&] { knn::inspect_data_file(path, 0); });
  EXPECT_NE(msg.find(path + ":1:1: line 1 holds text (\"x\") beside numbers: expected a header line"), std::string::npos) << msg;
}

TEST(DataFiles, AFileChangedAfterItWasInspectedIsRefused) {
  TempFolder dir;
  const auto v = random_floats(40, 7);
  for (const char* name : {"c.bin", "c.npy", "c.fvecs", "c.csv"}) {
    SCOPED_TRACE(name);
    const std::string path = dir.file(name);
    const std::string ext = fs::path(name).extension().string();
    const auto make = [&](const std::vector<float>& f) {
      return ext == ".bin" ? float_bytes(f) : ext == ".npy" ? npy(f.size() / 4, 4, f) : ext == ".fvecs" ? fvecs(4, f) : join_lines(csv_lines(4, f));
    };
    write_bytes(path, make(v));
    const auto info = knn::inspect_data_file(path, 4);
    ASSERT_EQ(info.rows, 10u);
    write_bytes(path, make(random_floats(44, 8)));  // one row more
    std::vector<float> got(40);
    const std::string msg = error_of([&] { knn::read_data_file(info, got.data()); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("changed"), std::string::npos) << msg;
  }
}

// ---------------------------------------------------------------- refusals

struct Made {
  std::string bytes;
  std::vector<std::string> parts;  // what the message must hold besides the file's path
};

struct BadFile {
  std::string name;  // test name, and the file's name with its extension
  enum Stage { inspect, read } stage;
  std::uint64_t raw_cols;
  std::function<Made()> make;
};

void PrintTo(const BadFile& b, std::ostream* os) { *os << b.name; }

constexpr std::size_t kRows = 10, kDim = 4;

// The 40 random floats every bad file starts from, with one value replaced.
std::vector<float> floats_with(std::size_t index, float value) {
  auto v = random_floats(kRows * kDim, 99);
  if (index < v.size()) v[index] = value;
  return v;
}

std::string npy_good_header() { return npy_header(npy_dict("(10, 4)")); }

std::vector<BadFile> bad_files() {
  std::vector<BadFile> b;
  const std::size_t h = npy_good_header().size();  // the .npy data offset (64 or 128)
  const std::size_t rec = 4 + 4 * kDim;            // one .fvecs vector: 20 bytes

  // NaN, +Inf, -Inf in every format, at row 3, coordinate 1 (float 13).
  const std::vector<std::pair<const char*, float>> specials = {{"nan", kNaN}, {"pos_inf", kInf}, {"neg_inf", -kInf}};
  for (const auto& [tag, value] : specials) {
    const float x = value;
    const std::string shown = std::isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf";
    b.push_back({fmt::format("npy_{}.npy", tag), BadFile::read, 0, [=] {
                   return Made{npy(kRows, kDim, floats_with(13, x)), {fmt::format("{} at byte {} (row 3, coordinate 1)", shown, h + 13 * 4)}};
                 }});
    b.push_back({fmt::format("fvecs_{}.fvecs", tag), BadFile::read, 0, [=] {
                   return Made{fvecs(kDim, floats_with(13, x)), {fmt::format("{} at byte {} (vector 3, coordinate 1)", shown, 3 * rec + 4 + 4)}};
                 }});
    b.push_back({fmt::format("bin_{}.bin", tag), BadFile::read, kDim,
                 [=] { return Made{float_bytes(floats_with(13, x)), {fmt::format("{} at byte 52 (row 3, coordinate 1)", shown)}}; }});
    b.push_back({fmt::format("f32_{}.f32", tag), BadFile::read, kDim,
                 [=] { return Made{float_bytes(floats_with(39, x)), {fmt::format("{} at byte 156 (row 9, coordinate 3)", shown)}}; }});
  }
  // CSV spellings of NaN and infinities, on line 4 (row 3), field 1.
  for (const auto& [tag, token, shown] : std::vector<std::array<const char*, 3>>{
           {"nan", "nan", "NaN"}, {"NaN_upper", "NaN", "NaN"}, {"pos_inf", "inf", "+Inf"}, {"infinity", "Infinity", "+Inf"}, {"neg_inf", "-inf", "-Inf"},
           {"overflow", "1e39", "beyond float32 range"}, {"neg_overflow", "-3.5e38", "beyond float32 range"},
           {"partial_number", "1.5abc", "expected a number"}, {"hex", "0x10", "expected a number"}, {"empty_field", "", "expected a number"},
           {"two_signs", "+-1", "expected a number"}, {"space_inside", "1 2", "expected a number"}}) {
    const std::string tok = token, what = shown;
    b.push_back({fmt::format("csv_{}.csv", tag), BadFile::read, 0, [=] {
                   auto lines = csv_lines(kDim, random_floats(kRows * kDim, 5));
                   const std::size_t comma = lines[3].find(',');
                   lines[3] = lines[3].substr(0, comma + 1) + tok + lines[3].substr(lines[3].find(',', comma + 1));
                   return Made{join_lines(lines), {fmt::format(":4:{}: \"{}\" (row 3, coordinate 1)", comma + 2, tok), what}};
                 }});
  }
  b.push_back({"csv_bad_after_header.csv", BadFile::read, 0, [] {
                 auto lines = csv_lines(kDim, random_floats(kRows * kDim, 6));
                 lines[0] = "abc" + lines[0].substr(lines[0].find(','));
                 return Made{"x,y,z,w\n" + join_lines(lines), {":2:1: \"abc\" (row 0, coordinate 0): expected a number"}};
               }});

  // Wrong dimension: an .fvecs vector mid-file, a CSV row.
  b.push_back({"fvecs_dim_field_mid_file.fvecs", BadFile::read, 0, [=] {
                 std::string s = fvecs(kDim, floats_with(99, 0));
                 s.replace(7 * rec, 4, u32_bytes(3));  // the size still fits: found while reading
                 return Made{s, {fmt::format("vector 7 at byte {} has dimension 3, expected 4", 7 * rec)}};
               }});
  b.push_back({"fvecs_shorter_vector_mid_file.fvecs", BadFile::inspect, 0, [=] {
                 const auto v = floats_with(99, 0);
                 std::string s = fvecs(kDim, std::vector<float>(v.begin(), v.begin() + 7 * kDim));
                 s += u32_bytes(3) + float_bytes({1.0f, 2.0f, 3.0f});
                 s += fvecs(kDim, std::vector<float>(v.begin() + 8 * kDim, v.end()));
                 return Made{s, {fmt::format("vector 7 at byte {} has dimension 3, expected 4", 7 * rec)}};
               }});
  b.push_back({"fvecs_zero_dim.fvecs", BadFile::inspect, 0, [] { return Made{u32_bytes(0) + u32_bytes(0), {"vector 0 at byte 0 has dimension 0"}}; }});
  b.push_back({"fvecs_negative_dim.fvecs", BadFile::inspect, 0,
               [] { return Made{u32_bytes(std::uint32_t(-5)) + float_bytes(random_floats(8, 1)), {"vector 0 at byte 0 has dimension -5"}}; }});
  b.push_back({"csv_row_with_3_fields.csv", BadFile::inspect, 0, [] {
                 auto lines = csv_lines(kDim, random_floats(kRows * kDim, 9));
                 lines[5] = lines[5].substr(0, lines[5].rfind(','));
                 return Made{join_lines(lines), {":6:1: line 6 has 3 fields: expected 4, as on line 1"}};
               }});
  b.push_back({"csv_row_with_5_fields_after_header.csv", BadFile::inspect, 0, [] {
                 auto lines = csv_lines(kDim, random_floats(kRows * kDim, 9));
                 lines[9] += ",7";
                 return Made{"a,b,c,d\n" + join_lines(lines), {":11:1: line 11 has 5 fields: expected 4, as on line 2"}};
               }});
  b.push_back({"csv_blank_line_between_rows.csv", BadFile::inspect, 0, [] {
                 auto lines = csv_lines(kDim, random_floats(kRows * kDim, 9));
                 lines.insert(lines.begin() + 4, "");
                 return Made{join_lines(lines), {":5:1: line 5 is blank, then line 6 holds a row"}};
               }});

  // Short files: every binary format, cut mid-value, mid-vector, mid-header.
  b.push_back({"npy_short_data.npy", BadFile::inspect, 0, [=] {
                 const std::string s = npy(kRows, kDim, floats_with(99, 0));
                 return Made{s.substr(0, s.size() - 16), {fmt::format("short file: expected 160 bytes of data after the header at offset {}, file has 144", h)}};
               }});
  b.push_back({"npy_cut_mid_value.npy", BadFile::inspect, 0, [=] {
                 const std::string s = npy(kRows, kDim, floats_with(99, 0));
                 return Made{s.substr(0, s.size() - 3), {fmt::format("short file: expected 160 bytes of data after the header at offset {}, file has 157", h)}};
               }});
  b.push_back({"npy_cut_in_header.npy", BadFile::inspect, 0, [] {
                 return Made{npy_good_header().substr(0, 40), {"short file: the header length at byte 8 says"}};
               }});
  b.push_back({"npy_cut_in_preamble.npy", BadFile::inspect, 0, [] { return Made{std::string("\x93NUMP", 5), {"short file: 5 bytes"}}; }});
  b.push_back({"npy_empty.npy", BadFile::inspect, 0, [] { return Made{"", {"short file: 0 bytes"}}; }});
  b.push_back({"fvecs_cut_mid_vector.fvecs", BadFile::inspect, 0, [] {
                 const std::string s = fvecs(kDim, floats_with(99, 0));
                 return Made{s.substr(0, s.size() - 6),
                             {"short file: 194 bytes is not a whole number of 20-byte vectors of dimension 4: vector 9 at byte 180 is cut after 14 bytes"}};
               }});
  b.push_back({"fvecs_cut_in_dim_field.fvecs", BadFile::inspect, 0, [] {
                 const std::string s = fvecs(kDim, floats_with(99, 0));
                 return Made{s.substr(0, 182), {"vector 9 at byte 180 is cut after 2 bytes"}};
               }});
  b.push_back({"fvecs_three_bytes.fvecs", BadFile::inspect, 0, [] { return Made{"abc", {"short file: 3 bytes"}}; }});
  b.push_back({"fvecs_empty.fvecs", BadFile::inspect, 0, [] { return Made{"", {"empty file"}}; }});
  b.push_back({"fvecs_huge_dim.fvecs", BadFile::inspect, 0, [] {
                 return Made{u32_bytes(0x7fffffff) + float_bytes(random_floats(8, 2)), {"vector 0 at byte 0 is cut after 36 bytes"}};
               }});
  b.push_back({"bin_cut_mid_row.bin", BadFile::inspect, kDim, [] {
                 return Made{float_bytes(floats_with(99, 0)).substr(0, 152),
                             {"short file: 152 bytes is not a whole number of 16-byte rows (k = 4 float32): the last row, row 9 at byte 144, is cut after 8 bytes"}};
               }});
  b.push_back({"f32_cut_mid_value.f32", BadFile::inspect, kDim,
               [] { return Made{float_bytes(floats_with(99, 0)).substr(0, 158), {"short file: 158 bytes", "cut after 14 bytes"}}; }});

  // .npy headers that lie or describe something else.
  b.push_back({"npy_header_length_past_the_end.npy", BadFile::inspect, 0, [] {
                 std::string s = npy(kRows, kDim, floats_with(99, 0));
                 s[8] = char(0x60), s[9] = char(0xea);  // 60000
                 return Made{s, {"short file: the header length at byte 8 says 60000 bytes of header from offset 10, file has"}};
               }});
  b.push_back({"npy_header_length_over_cap.npy", BadFile::inspect, 0, [] {
                 std::string s = npy(kRows, kDim, floats_with(99, 0), 2);
                 s.replace(8, 4, u32_bytes(0x80000000u));
                 return Made{s, {"byte 8: a header length of 2147483648 bytes: expected at most 65536"}};
               }});
  b.push_back({"npy_1e15_rows.npy", BadFile::inspect, 0, [] {  // refused from the header: nothing is allocated
                 const std::string header = npy_header(npy_dict("(1000000000000000, 4)"));
                 return Made{header + float_bytes(random_floats(9, 3)),
                             {fmt::format("short file: expected 16000000000000000 bytes of data after the header at offset {}, file has 36", header.size())}};
               }});
  b.push_back({"npy_shape_product_over_2_64.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(4611686018427387904, 4611686018427387904)")) + float_bytes(random_floats(4, 3)),
                             {"short file: expected more than 2^64 bytes of data"}};
               }});
  b.push_back({"npy_shape_entry_over_2_62.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(99999999999999999999, 4)")), {"a shape entry of more than 2^62"}};
               }});
  b.push_back({"npy_trailing_bytes.npy", BadFile::inspect, 0, [=] {
                 return Made{npy(kRows, kDim, floats_with(99, 0)) + "junk", {fmt::format("164 bytes of data after the header at offset {}: expected 160 for shape (10, 4)", h)}};
               }});
  b.push_back({"npy_1d.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(40,)")) + float_bytes(floats_with(99, 0)), {"1-D shape (40,): expected a 2-D shape (rows, k)"}};
               }});
  b.push_back({"npy_3d.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(2, 5, 4)")) + float_bytes(floats_with(99, 0)), {"3-D shape (2, 5, 4)"}};
               }});
  b.push_back({"npy_0d.npy", BadFile::inspect, 0, [] { return Made{npy_header(npy_dict("()")) + float_bytes({1.0f}), {"0-D shape ()"}}; }});
  b.push_back({"npy_float64.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(10, 4)", "'<f8'")) + float_bytes(random_floats(80, 4)), {"dtype '<f8': expected little-endian float32 '<f4'"}};
               }});
  b.push_back({"npy_int32.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(10, 4)", "'<i4'")) + float_bytes(random_floats(40, 4)), {"dtype '<i4'"}};
               }});
  b.push_back({"npy_any_endian_f4.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(10, 4)", "'|f4'")) + float_bytes(random_floats(40, 4)), {"dtype '|f4'"}};
               }});
  b.push_back({"npy_big_endian.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(10, 4)", "'>f4'")) + float_bytes(random_floats(40, 4)), {"dtype '>f4' is big-endian float32"}};
               }});
  b.push_back({"npy_fortran_order.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(10, 4)", "'<f4'", "True")) + float_bytes(random_floats(40, 4)), {"fortran_order True"}};
               }});
  b.push_back({"npy_structured.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header(npy_dict("(10,)", "[('x', '<f4', (4,))]")) + float_bytes(random_floats(40, 4)), {"a structured dtype"}};
               }});
  b.push_back({"npy_bad_magic.npy", BadFile::inspect, 0, [] {
                 std::string s = npy(kRows, kDim, floats_with(99, 0));
                 s[1] = 'n';
                 return Made{s, {"byte 0: not a .npy file"}};
               }});
  b.push_back({"npy_version_4.npy", BadFile::inspect, 0, [] {
                 std::string s = npy(kRows, kDim, floats_with(99, 0));
                 s[6] = 4;
                 return Made{s, {"byte 6: .npy format version 4.0"}};
               }});
  b.push_back({"npy_header_not_a_dict.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (10, 4), }") + float_bytes(random_floats(40, 4)),
                             {".npy header at byte 44: 'M': expected True or False"}};
               }});
  b.push_back({"npy_header_extra_key.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (10, 4), 'foo': True}") + float_bytes(random_floats(40, 4)),
                             {"header key 'foo'"}};
               }});
  b.push_back({"npy_header_missing_shape.npy", BadFile::inspect, 0, [] {
                 return Made{npy_header("{'descr': '<f4', 'fortran_order': False}") + float_bytes(random_floats(40, 4)), {"the header lacks"}};
               }});

  // Not a data file at all.
  b.push_back({"vectors.txt", BadFile::inspect, 0, [] {
                 return Made{float_bytes(floats_with(99, 0)), {"unknown extension \".txt\": expected one of .npy, .fvecs, .bin, .f32"}};
               }});
  b.push_back({"no_extension", BadFile::inspect, 0, [] { return Made{float_bytes(floats_with(99, 0)), {"no extension: expected one of"}}; }});
  return b;
}

class DataFileRefuses : public ::testing::TestWithParam<BadFile> {};

TEST_P(DataFileRefuses, WithTheFileAndTheOffsetOrLineThatIsWrong) {
  const BadFile& b = GetParam();
  TempFolder dir;
  const std::string path = dir.file(b.name);
  const Made made = b.make();
  write_bytes(path, made.bytes);
  std::string msg;
  if (b.stage == BadFile::inspect) {
    msg = error_of([&] { knn::inspect_data_file(path, b.raw_cols); });
  } else {
    knn::DataFileInfo info;
    ASSERT_NO_THROW(info = knn::inspect_data_file(path, b.raw_cols)) << "the shape is fine: only reading may refuse this file";
    ASSERT_EQ(info.rows * info.cols, kRows * kDim);
    std::vector<float> out(kRows * kDim);
    msg = error_of([&] { knn::read_data_file(info, out.data()); });
  }
  ASSERT_FALSE(msg.empty()) << b.name << " was accepted";
  EXPECT_EQ(msg.rfind(path, 0), 0u) << "the message starts with the file's path: " << msg;
  EXPECT_TRUE(one_line(msg)) << msg;
  for (const auto& part : made.parts) EXPECT_NE(msg.find(part), std::string::npos) << "lacks \"" << part << "\": " << msg;
}

INSTANTIATE_TEST_SUITE_P(Bad, DataFileRefuses, ::testing::ValuesIn(bad_files()), [](const ::testing::TestParamInfo<BadFile>& i) {
  std::string n = i.param.name;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

TEST(DataFiles, MissingFilesDirectoriesAndFifosAreRefusedWithoutHanging) {
  TempFolder dir;
  const std::string missing = dir.file("nope.npy");
  std::string msg = error_of([&] { knn::inspect_data_file(missing, 0); });
  EXPECT_EQ(msg, missing + ": no such file: expected a data file");
  const std::string folder = dir.file("folder.fvecs");
  fs::create_directories(folder);
  msg = error_of([&] { knn::inspect_data_file(folder, 0); });
  EXPECT_EQ(msg, folder + ": not a regular file: expected a data file");
  const std::string fifo = dir.file("pipe.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  msg = error_of([&] { knn::inspect_data_file(fifo, 0); });  // opening a FIFO for reading would wait for a writer
  EXPECT_EQ(msg, fifo + ": not a regular file: expected a data file");
}

TEST(DataFiles, ControlCharactersInAPathAreEscaped) {
  const std::string msg = error_of([&] { knn::inspect_data_file("/nonexistent/a\nb.npy", 0); });
  EXPECT_EQ(msg, "/nonexistent/a\\x0ab.npy: no such file: expected a data file");
}

// ---------------------------------------------------------------- the matrix

// One case of k = 4, m = 3 and n (10 unless `fields` sets it), plus `fields` and an optional second case.
std::string matrix_with(const std::string& fields, const std::string& second_case = "") {
  const std::string n = fields.find("\"n\":") == std::string::npos ? R"(,"n":10)" : "";
  return fmt::format(R"({{"schema_version":1,"cases":[{{"id":0,"k":4,"m":3{}{}}}{}]}})", n, fields, second_case);
}

std::string matrix_error(const std::string& text, const std::string& label) {
  return error_of([&] { knn::parse_matrix(text, label); });
}

TEST(DataFileMatrix, PathsResolveAgainstTheMatrixFolderAndAbsolutePathsWork) {
  TempFolder dir;
  write_bytes(dir.file("refs.fvecs"), fvecs(kDim, random_floats(40, 11)));
  fs::create_directories(dir.path / "sub");
  write_bytes(dir.file("sub/q.npy"), npy(3, kDim, random_floats(12, 12)));
  const std::string label = dir.file("m.json");
  const auto mx = knn::parse_matrix(matrix_with(R"(,"references_file":"refs.fvecs","queries_file":"sub/q.npy")"), label);
  ASSERT_EQ(mx.cases.size(), 1u);
  const auto& c = mx.cases[0];
  EXPECT_EQ(c.references_file, "refs.fvecs");
  EXPECT_EQ(c.queries_file, "sub/q.npy");
  EXPECT_EQ(fs::path(c.references_path), dir.path / "refs.fvecs");
  EXPECT_EQ(fs::path(c.queries_path), dir.path / "sub/q.npy");

  // The same matrix loaded from a file elsewhere, with an absolute path for the queries.
  const std::string other = dir.file("sub/m2.json");
  write_bytes(other, matrix_with(fmt::format(R"(,"references_file":"../refs.fvecs","queries_file":"{}")", dir.file("sub/q.npy"))));
  const auto mx2 = knn::load_matrix(other);
  EXPECT_EQ(mx2.cases[0].queries_path, dir.file("sub/q.npy"));
  EXPECT_EQ(fs::path(mx2.cases[0].references_path).lexically_normal(), dir.path / "refs.fvecs");

  // Without files nothing changes.
  const auto plain = knn::parse_matrix(matrix_with(""), label);
  EXPECT_TRUE(plain.cases[0].queries_path.empty());
  EXPECT_TRUE(plain.cases[0].references_file.empty());
}

TEST(DataFileMatrix, AShapeThatDisagreesWithTheCaseIsRefusedWithTheNumbers) {
  TempFolder dir;
  write_bytes(dir.file("vectors.fvecs"), fvecs(kDim, random_floats(40, 13)));              // 10 × 4
  write_bytes(dir.file("k3.npy"), npy(10, 3, random_floats(30, 14)));                      // 10 × 3
  write_bytes(dir.file("k3.bin"), float_bytes(random_floats(36, 15)));                     // 144 bytes: 9 rows of k = 4
  write_bytes(dir.file("q.csv"), join_lines(csv_lines(kDim, random_floats(8, 16))));       // 2 × 4
  const std::string label = dir.file("m.json");
  const std::string prefix = label + ": ";
  struct Want {
    std::string fields, second, expect;
  };
  for (const Want& w : std::vector<Want>{
           {R"(,"references_file":"vectors.fvecs","n":12)", "",
            "/cases/0/references_file: " + dir.file("vectors.fvecs") + ": 10 rows of 4 floats: expected n = 12 rows of k = 4"},
           {R"(,"queries_file":"vectors.fvecs")", "", "/cases/0/queries_file: " + dir.file("vectors.fvecs") + ": 10 rows of 4 floats: expected m = 3 rows of k = 4"},
           {R"(,"references_file":"k3.npy")", "", "/cases/0/references_file: " + dir.file("k3.npy") + ": 10 rows of 3 floats: expected n = 10 rows of k = 4"},
           {R"(,"references_file":"k3.bin")", "", "/cases/0/references_file: " + dir.file("k3.bin") + ": 9 rows of 4 floats: expected n = 10 rows of k = 4"},
           {"", R"(,{"id":1,"k":4,"m":3,"n":10,"queries_file":"q.csv"})",
            "/cases/1/queries_file: " + dir.file("q.csv") + ": 2 rows of 4 floats: expected m = 3 rows of k = 4"},
       }) {
    const std::string msg = matrix_error(matrix_with(w.fields, w.second), label);
    EXPECT_EQ(msg, prefix + w.expect);
  }
}

TEST(DataFileMatrix, FileProblemsNameTheMatrixTheJsonPathAndTheDataFile) {
  TempFolder dir;
  const std::string s = npy(kRows, kDim, random_floats(40, 17));
  write_bytes(dir.file("short.npy"), s.substr(0, s.size() - 8));
  const std::string label = dir.file("m.json");
  std::string msg = matrix_error(matrix_with(R"(,"references_file":"short.npy")"), label);
  EXPECT_EQ(msg.rfind(label + ": /cases/0/references_file: " + dir.file("short.npy") + ": short file: expected 160 bytes", 0), 0u) << msg;
  msg = matrix_error(matrix_with(R"(,"queries_file":"missing.fvecs")"), label);
  EXPECT_EQ(msg, label + ": /cases/0/queries_file: " + dir.file("missing.fvecs") + ": no such file: expected a data file");
  msg = matrix_error(matrix_with(R"(,"queries_file":"m.json")"), label);
  EXPECT_NE(msg.find("/cases/0/queries_file: " + dir.file("m.json") + ": unknown extension \".json\""), std::string::npos) << msg;
}

TEST(DataFileMatrix, BadValuesAndDefaultsAreRefused) {
  for (const auto& [fields, expect] : std::vector<std::pair<std::string, std::string>>{
           {R"(,"queries_file":7)", "x.json: /cases/0/queries_file: 7: expected a path to a data file"},
           {R"(,"queries_file":"")", "x.json: /cases/0/queries_file: \"\": expected a path to a data file"},
           {R"(,"references_file":null)", "x.json: /cases/0/references_file: null: expected a path"},
           {R"(,"references_file":["a.npy"])", "x.json: /cases/0/references_file: [an array of 1]: expected a path"},
           {R"(,"references_file":"a\u0000.npy")", "x.json: /cases/0/references_file: \"a\\x00.npy\": expected a path"},
       }) {
    const std::string msg = matrix_error(matrix_with(fields), "x.json");
    EXPECT_EQ(msg.rfind(expect, 0), 0u) << msg;
  }
  const std::string msg =
      matrix_error(R"({"schema_version":1,"defaults":{"queries_file":"q.npy"},"cases":[{"id":0,"k":4,"m":3,"n":10}]})", "x.json");
  EXPECT_EQ(msg.rfind("x.json: /defaults/queries_file: \"q.npy\": expected no unknown field", 0), 0u) << msg;
}

// ---------------------------------------------------------------- results JSON

TEST(DataFileResults, TheCaseRecordsItsFilesOrNullAndOldResultsStillRead) {
  knn::Result r;
  r.problem_case.id = 4;
  r.problem_case.dim = 4;
  r.problem_case.m = 3;
  r.problem_case.n = 10;
  r.problem_case.references_file = "data/refs.fvecs";
  r.problem_case.references_path = "/somewhere/data/refs.fvecs";
  r.version = "v0";
  r.status = knn::Status::skip;
  const auto j = knn::result_to_json(r);
  EXPECT_TRUE(j["case"]["queries_file"].is_null());
  EXPECT_EQ(j["case"]["references_file"], "data/refs.fvecs");  // as written in the matrix, not the resolved path
  EXPECT_EQ(j["case"]["distribution"], "uniform");
  const auto back = knn::result_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.problem_case.references_file, "data/refs.fvecs");
  EXPECT_TRUE(back.problem_case.queries_file.empty());

  auto old = nlohmann::json::parse(j.dump());
  old["case"].erase("queries_file");
  old["case"].erase("references_file");
  const auto read_old = knn::result_from_json(old);
  EXPECT_TRUE(read_old.problem_case.references_file.empty());
  EXPECT_EQ(read_old.problem_case.n, 10);
}

// ---------------------------------------------------------------- the binary

struct BinaryRun {
  int code;
  std::string out, err;
};

BinaryRun run_binary(const std::string& args, const std::string& dir) {
  const std::string out = dir + "/stdout.txt", err = dir + "/stderr.txt";
  const int status = std::system((std::string("'") + KNN_BINARY + "' " + args + " >'" + out + "' 2>'" + err + "'").c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out), slurp(err)};
}

const std::string kFast = " --version v0 --warmup 0 --min-samples 1 --min-time 0 ";

TEST(DataFileRun, FvecsReferencesWithGeneratedQueriesPassWithTheFilesChecksum) {
  TempFolder dir;
  const int dim = 5, m = 7, n = 300;
  const auto refs = random_floats(std::size_t(n) * dim, 21);
  write_bytes(dir.file("refs.fvecs"), fvecs(dim, refs));
  const std::string matrix = dir.file("m.json"), json = dir.file("out.json");
  write_bytes(matrix, fmt::format(R"({{"schema_version":1,"cases":[{{"id":3,"k":{},"m":{},"n":{},"topk":2,"seed":5,"references_file":"refs.fvecs"}}]}})", dim, m, n));
  const BinaryRun r = run_binary("--config '" + matrix + "'" + kFast + "--json '" + json + "'", dir.path.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(j["results"].size(), 1u);
  const auto& res = j["results"][0];
  EXPECT_EQ(res["status"], "pass") << res["reason"];
  EXPECT_EQ(res["validation"]["status"], "pass");
  EXPECT_EQ(res["case"]["references_file"], "refs.fvecs");
  EXPECT_TRUE(res["case"]["queries_file"].is_null());
  EXPECT_EQ(res["case"]["checksums"]["references"], knn::to_hex(knn::checksum(refs.data(), refs.size())));
  std::vector<float> queries(std::size_t(m) * dim);
  knn::generate_points(knn::Distribution::uniform, 5, knn::PointSet::queries, dim, std::size_t(m), queries.data());
  EXPECT_EQ(res["case"]["checksums"]["queries"], knn::to_hex(knn::checksum(queries.data(), queries.size())));
}

TEST(DataFileRun, CsvQueriesAndNpyReferencesPass) {
  TempFolder dir;
  const int dim = 3, m = 11, n = 64;
  const auto queries = random_floats(std::size_t(m) * dim, 22), refs = random_floats(std::size_t(n) * dim, 23);
  write_bytes(dir.file("q.csv"), "x,y,z\n" + join_lines(csv_lines(dim, queries)));
  write_bytes(dir.file("r.npy"), npy(n, dim, refs));
  const std::string matrix = dir.file("m.json"), json = dir.file("out.json");
  write_bytes(matrix, fmt::format(R"({{"schema_version":1,"cases":[{{"id":0,"k":{},"m":{},"n":{},"queries_file":"q.csv","references_file":"r.npy"}}]}})", dim, m, n));
  const BinaryRun r = run_binary("--config '" + matrix + "'" + kFast + "--json '" + json + "'", dir.path.string());
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(std::ifstream(json));
  const auto& res = j["results"][0];
  EXPECT_EQ(res["status"], "pass") << res["reason"];
  EXPECT_EQ(res["case"]["checksums"]["queries"], knn::to_hex(knn::checksum(queries.data(), queries.size())));
  EXPECT_EQ(res["case"]["checksums"]["references"], knn::to_hex(knn::checksum(refs.data(), refs.size())));
}

TEST(DataFileRun, ANaNInAFileExits2WithOneLineNamingTheByte) {
  TempFolder dir;
  auto refs = random_floats(40, 24);
  refs[13] = kNaN;
  write_bytes(dir.file("nan.bin"), float_bytes(refs));
  const std::string matrix = dir.file("m.json");
  write_bytes(matrix, R"({"schema_version":1,"cases":[{"id":0,"k":4,"m":2,"n":10,"references_file":"nan.bin"}]})");
  const BinaryRun r = run_binary("--config '" + matrix + "'" + kFast + "--json '" + dir.file("out.json") + "'", dir.path.string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, fmt::format("knnbench: {}: case 0: references_file: {}: NaN at byte 52 (row 3, coordinate 1): expected finite float32 values\n", matrix,
                               dir.file("nan.bin")));
}

TEST(DataFileRun, AShapeMismatchExits2BeforeRunningAnything) {
  TempFolder dir;
  write_bytes(dir.file("r.fvecs"), fvecs(4, random_floats(40, 25)));
  const std::string matrix = dir.file("m.json");
  write_bytes(matrix, R"({"schema_version":1,"cases":[{"id":0,"k":4,"m":2,"n":11,"references_file":"r.fvecs"}]})");
  const BinaryRun r = run_binary("--config '" + matrix + "' --list", dir.path.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, fmt::format("knnbench: {}: /cases/0/references_file: {}: 10 rows of 4 floats: expected n = 11 rows of k = 4\n", matrix, dir.file("r.fvecs")));
}

}  // namespace
