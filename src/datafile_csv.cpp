// The CSV reader: comma-separated float rows, an optional header line, every field checked.
#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

#include "datafile_detail.hpp"

namespace knn::datafile_detail {
namespace {
// ---------------------------------------------------------------- CSV
// Lines of a file, read in chunks; no line may exceed kMaxCsvLine.
class LineReader {
 public:
  LineReader(const std::string& path, const File& f) : path_(path), f_(f) {}

  // The next line without its "\n" or "\r\n"; false at the end of the file.
  bool next(std::string_view& line) {
    for (;;) {
      const auto nl = buf_.find('\n', pos_);
      if (nl != std::string::npos) {
        line = std::string_view(buf_).substr(pos_, nl - pos_);
        pos_ = nl + 1;
        break;
      }
      if (buf_.size() - pos_ > kMaxCsvLine) refuse(path_, fmt::format("line {} is longer than {} bytes: expected one row per line", line_ + 1, kMaxCsvLine));
      if (eof_) {
        if (pos_ >= buf_.size()) return false;
        line = std::string_view(buf_).substr(pos_);
        pos_ = buf_.size();
        break;
      }
      buf_.erase(0, pos_);
      pos_ = 0;
      const std::size_t old = buf_.size();
      buf_.resize(old + kReadChunk);
      const std::uint64_t got = f_.read_some(offset_, buf_.data() + old, kReadChunk);
      buf_.resize(old + std::size_t(got));
      offset_ += got;
      eof_ = got == 0;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_;
    return true;
  }
  std::uint64_t line_number() const { return line_; }

 private:
  const std::string& path_;
  const File& f_;
  std::string buf_;
  std::size_t pos_ = 0;
  std::uint64_t offset_ = 0, line_ = 0;
  bool eof_ = false;
};

bool blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// One comma-separated field: the token without surrounding spaces and its 1-based column.
struct Field {
  std::string_view token;
  std::size_t column;
};

// Calls fn(field) for each field of `line`; returns the count.
template <class Fn>
std::uint64_t for_each_field(std::string_view line, Fn&& fn) {
  std::uint64_t count = 0;
  std::size_t start = 0;
  for (;;) {
    const auto comma = line.find(',', start);
    std::string_view raw = line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t lead = 0;
    while (lead < raw.size() && (raw[lead] == ' ' || raw[lead] == '\t')) ++lead;
    std::size_t end = raw.size();
    while (end > lead && (raw[end - 1] == ' ' || raw[end - 1] == '\t')) --end;
    fn(Field{raw.substr(lead, end - lead), start + lead + 1});
    ++count;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return count;
}

std::uint64_t count_fields(std::string_view line) { return std::uint64_t(std::count(line.begin(), line.end(), ',')) + 1; }

enum class Parsed { ok, not_a_number, out_of_range };

// For a decimal number that from_chars read whole, [-]digits[.digits][e[+-]digits] and not zero:
// whether it is below 1, from the decimal exponent of its first non-zero digit.
bool below_one(std::string_view t) {
  if (t[0] == '-') t.remove_prefix(1);
  const std::size_t e = std::min(t.find_first_of("eE"), t.size());
  const std::string_view mantissa = t.substr(0, e);
  const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
  const std::size_t lead = mantissa.find_first_of("123456789");
  if (lead == std::string_view::npos) return true;
  const std::int64_t lead_exp = lead < point ? std::int64_t(point - lead) - 1 : -std::int64_t(lead - point);
  std::int64_t exp = 0;
  std::size_t i = e + 1;
  const bool negative = i < t.size() && t[i] == '-';
  if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
  for (; i < t.size(); ++i) exp = std::min<std::int64_t>(exp * 10 + (t[i] - '0'), std::int64_t(1) << 40);
  return lead_exp + (negative ? -exp : exp) < 0;
}

// The whole token must be one number (no partial parses: "1.5abc" is refused). NaN and Inf
// parse here and are refused by the caller with their position.
Parsed parse_float(std::string_view token, float& out) {
  if (token.size() > 1 && token[0] == '+' && token[1] != '-' && token[1] != '+') token.remove_prefix(1);
  if (token.empty()) return Parsed::not_a_number;
  const char* first = token.data();
  const char* last = first + token.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (ec == std::errc() && ptr == last) return Parsed::ok;
  if (ec != std::errc::result_out_of_range || ptr != last) return Parsed::not_a_number;
  // Out of float range: below the smallest subnormal rounds to zero, which is fine; beyond
  // FLT_MAX would be an infinity, which is not. Out of double's range too, tiny is still zero.
  double d = 0;
  auto [dptr, dec] = std::from_chars(first, last, d);
  if (dec == std::errc::result_out_of_range && dptr == last && below_one(token)) d = token[0] == '-' ? -0.0 : 0.0;
  else if (dec != std::errc() || dptr != last || std::fabs(d) > double(FLT_MAX)) return Parsed::out_of_range;
  out = float(d);
  return Parsed::ok;
}

bool is_header(std::string_view line) {
  bool any_number = false;
  for_each_field(line, [&](const Field& f) {
    float v;
    any_number = any_number || parse_float(f.token, v) != Parsed::not_a_number;
  });
  return !any_number;
}

std::string csv_at(const std::string& path, std::uint64_t line, std::size_t column) { return fmt::format("{}:{}:{}", shown(path), line, column); }

constexpr const char* kCsvExpected = "expected numbers separated by ',', one row per line, lines ending in \\n or \\r\\n";
constexpr const char* kHeaderTaken = "line 1, which holds no number, was taken as a header";

// What makes a line no row of this reader: another delimiter, quotes, a lone CR (a file with
// CR-only line ends is one long line). 0 when the line is fine, else the 1-based column and why.
std::pair<std::size_t, std::string> line_problem(std::string_view line, bool header_line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (ch == '\r') return {i + 1, "a carriage return (CR) inside the line: lines must end in \\n or \\r\\n (CR alone, old Mac line ends, does not end a line)"};
    if (header_line) continue;  // a header may hold anything but a lone CR
    if (ch == ';') return {i + 1, "';' between values: fields must be separated by ',' (not ';')"};
    if (ch == '"' || ch == '\'') return {i + 1, fmt::format("a quote ({}): values must be unquoted numbers", ch)};
  }
  if (header_line) return {0, ""};
  std::size_t end = line.size();
  while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
  if (end > 0 && line[end - 1] == ',' && line.find_first_not_of(", \t") != std::string_view::npos)
    return {end, "a trailing comma after the last value: a line must end with its last number, not ','"};
  std::pair<std::size_t, std::string> inner{0, ""};  // a tab inside a field (TSV); "1 2" is a bad number, refused when read
  for_each_field(line, [&](const Field& f) {
    const auto tab = f.token.find('\t');
    if (inner.first == 0 && tab != std::string_view::npos) inner = {f.column + tab, "a tab between values: fields must be separated by ','"};
  });
  return inner;
}

// Line 1 is a header when no field is a number, a row when every field is: text beside numbers is neither.
void refuse_mixed_first_line(const std::string& path, std::string_view line) {
  if (!line_problem(line, false).second.empty()) return;  // said with its column when the line is checked as a row
  for_each_field(line, [&](const Field& f) {
    float v;
    if (!f.token.empty() && parse_float(f.token, v) == Parsed::not_a_number)
      throw ConfigError(fmt::format("{}: line 1 holds text (\"{}\") beside numbers: expected a header line, whose fields are all text "
                                    "(it is skipped), or a row of numbers", csv_at(path, 1, f.column), shown(f.token, 40)));
  });
}

}  // namespace

std::string csv_header_note(const DataFileInfo& info) {
  return info.csv_first_row_line > 1 ? fmt::format(" (read as CSV, {}; {})", kCsvExpected, kHeaderTaken) : std::string();
}

DataFileInfo inspect_csv(const std::string& path, const File& f, DataFileInfo info) {
  LineReader lines(path, f);
  std::string_view line;
  std::uint64_t rows = 0, cols = 0, first_row_line = 0, blank_line = 0;
  bool header = false;
  while (lines.next(line)) {
    const std::uint64_t no = lines.line_number();
    if (no == 1 && line.substr(0, 3) == "\xEF\xBB\xBF")
      throw ConfigError(fmt::format("{}: the file starts with a UTF-8 byte order mark (BOM, bytes EF BB BF): expected a number or a header "
                                    "line at byte 0; save the file without a BOM", csv_at(path, 1, 1)));
    if (no == 1 && !blank(line) && !is_header(line)) refuse_mixed_first_line(path, line);
    if (no == 1 && !blank(line) && is_header(line)) {
      if (const auto [column, why] = line_problem(line, true); column != 0)
        throw ConfigError(fmt::format("{}: {} ({})", csv_at(path, no, column), why, kCsvExpected));
      header = true;
      continue;
    }
    if (blank(line)) {
      if (blank_line == 0) blank_line = no;
      continue;
    }
    if (const auto [column, why] = line_problem(line, false); column != 0)
      throw ConfigError(fmt::format("{}: {} ({}{})", csv_at(path, no, column), why, kCsvExpected, header ? std::string("; ") + kHeaderTaken : std::string()));
    if (blank_line != 0)
      throw ConfigError(fmt::format("{}: line {} is blank, then line {} holds a row: expected one row per line, blank lines only at the end",
                                    csv_at(path, blank_line, 1), blank_line, no));
    const std::uint64_t n = count_fields(line);
    if (rows == 0) {
      cols = n;
      first_row_line = no;
    } else if (n != cols) {
      throw ConfigError(fmt::format("{}: line {} has {} fields: expected {}, as on line {}", csv_at(path, no, 1), no, n, cols, first_row_line));
    }
    ++rows;
  }
  info.rows = rows;
  info.cols = cols;
  info.csv_first_row_line = rows ? first_row_line : header ? 2 : 1;  // read skips the header even with no rows
  return info;
}


namespace {
// Rows of a CSV file in increasing ranges: one pass over its lines, each row's field count checked,
// the values of the rows asked for parsed and checked.
class CsvRows final : public RowReader {
 public:
  explicit CsvRows(const DataFileInfo& info) : info_(info), f_(info.path), lines_(info_.path, f_) {}

  void read(std::uint64_t first, std::uint64_t count, float* out) override {
    std::string_view line;
    for (; row_ < first + count; ++row_) {
      if (!next_row(line)) refuse(info_.path, fmt::format("{} rows: expected the {} seen before: the file changed since it was inspected", row_, info_.rows));
      if (row_ < first) expect_fields(count_fields(line));
      else parse_row(line, out + (row_ - first) * info_.cols);
    }
  }
  void finish() override {
    std::string_view line;
    for (; next_row(line); ++row_) expect_fields(count_fields(line));
    if (row_ != info_.rows) refuse(info_.path, fmt::format("{} rows: expected the {} seen before: the file changed since it was inspected", row_, info_.rows));
  }

 private:
  // The next line that holds a row (no header, no blank line); false at the end of the file.
  bool next_row(std::string_view& line) {
    while (lines_.next(line)) {
      if (lines_.line_number() < info_.csv_first_row_line || blank(line)) continue;
      if (row_ >= info_.rows)
        refuse(info_.path, fmt::format("line {}: more rows than the {} seen before: the file changed since it was inspected", lines_.line_number(), info_.rows));
      return true;
    }
    return false;
  }
  void expect_fields(std::uint64_t n) const {
    const std::uint64_t no = lines_.line_number();
    if (n != info_.cols) throw ConfigError(fmt::format("{}: line {} has {} fields: expected {}", csv_at(info_.path, no, 1), no, n, info_.cols));
  }
  void parse_row(std::string_view line, float* dst) const {
    const std::uint64_t no = lines_.line_number();
    std::uint64_t coord = 0;
    const std::uint64_t n = for_each_field(line, [&](const Field& fld) {
      if (coord >= info_.cols) return;
      float v = 0;
      const Parsed p = parse_float(fld.token, v);
      const std::string where = csv_at(info_.path, no, fld.column);
      const std::string tok = shown(fld.token, 40);
      if (p == Parsed::not_a_number)
        throw ConfigError(fmt::format("{}: \"{}\" (row {}, coordinate {}): expected a number{}", where, tok, row_, coord, header_note()));
      if (p == Parsed::out_of_range)
        throw ConfigError(fmt::format("{}: \"{}\" (row {}, coordinate {}) overflows float32 (beyond float32 range, largest ±{:g}): expected finite float32 values", where, tok, row_, coord, double(FLT_MAX)));
      if (!std::isfinite(v))
        throw ConfigError(fmt::format("{}: \"{}\" (row {}, coordinate {}) is {}: expected finite float32 values", where, tok, row_, coord, non_finite_name(v)));
      dst[coord] = v;
      ++coord;
    });
    expect_fields(n);
  }
  std::string header_note() const { return info_.csv_first_row_line > 1 ? std::string(" (") + kHeaderTaken + ")" : std::string(); }

  DataFileInfo info_;
  File f_;
  LineReader lines_;
  std::uint64_t row_ = 0;  // the row the next row line holds
};
}  // namespace

std::unique_ptr<RowReader> csv_rows(const DataFileInfo& info) { return std::make_unique<CsvRows>(info); }
}  // namespace knn::datafile_detail
