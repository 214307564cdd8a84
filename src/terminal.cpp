#include "terminal.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "mpi_env.hpp"

namespace knn {
namespace {

const char* code(Colour c) {
  switch (c) {
    case Colour::red: return "\033[1;31m";
    case Colour::green: return "\033[1;32m";
    case Colour::yellow: return "\033[1;33m";
  }
  return "";
}

// The number after the letters of an id ("v12" -> 12), or -1; `prefix` gets the letters.
int id_number(const std::string& id, std::string& prefix) {
  const auto digit = id.find_first_of("0123456789");
  if (digit == std::string::npos || digit == 0 || id.find_first_not_of("0123456789", digit) != std::string::npos || id.size() - digit > 9)
    return -1;
  prefix = id.substr(0, digit);
  return std::stoi(id.substr(digit));
}

// Runs of consecutive numbers as "a–b", joined by ", ".
template <class Label>
std::string runs(const std::vector<int>& numbers, const std::vector<std::string>& prefixes, Label label) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[i] >= 0 && numbers[j + 1] == numbers[j] + 1 && prefixes[j + 1] == prefixes[i]) ++j;
    out += (out.empty() ? "" : ", ") + label(i) + (j > i + 1 ? "–" + label(j) : j == i + 1 ? ", " + label(j) : "");
    i = j + 1;
  }
  return out;
}

}  // namespace

bool colour_wanted(int fd) {
  const auto set = [](const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0';
  };
  if (set("NO_COLOR")) return false;
  if (started_by_mpi_launcher()) return set("FORCE_COLOR") && std::string(std::getenv("FORCE_COLOR")) != "0";
  return ::isatty(fd) == 1;
}

bool progress_wanted(int fd) { return ::isatty(fd) == 1 && !started_by_mpi_launcher(); }

std::string paint(const std::string& text, Colour c, bool on) { return on ? code(c) + text + "\033[0m" : text; }

std::string paint_word(const std::string& text, const std::string& word, Colour c, bool on) {
  if (!on || word.empty()) return text;
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + word.size())) {
    const std::size_t end = at + word.size();
    const bool starts = at == 0 || text[at - 1] == ' ' || text[at - 1] == '\n';
    const bool ends = end == text.size() || text[end] == ' ' || text[end] == '\n' || text[end] == ':';
    if (!starts || !ends) continue;
    out += text.substr(from, at - from) + paint(word, c, true);
    from = end;
  }
  return out + text.substr(from);
}

std::size_t display_width(const std::string& text) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\033') {  // CSI ... letter
      while (i < text.size() && !((text[i] >= 'a' && text[i] <= 'z') || (text[i] >= 'A' && text[i] <= 'Z'))) ++i;
      continue;
    }
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++w;  // not a UTF-8 continuation byte
  }
  return w;
}

std::string wrap(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out, line;
  const std::string pad(indent, ' ');
  auto flush = [&] {
    out += line + "\n";
    line = pad;
  };
  // Leading blanks stay (an indented line keeps its indent).
  std::size_t start = std::min(text.find_first_not_of(' '), text.size());
  line = text.substr(0, start);
  const std::string lead = line;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    start = end + 1;
    const bool fresh = line == lead || line == pad;
    if (!fresh && display_width(line) + 1 + display_width(word) > width) flush();
    if (!(line == lead || line == pad)) line += ' ';
    while (display_width(line) + display_width(word) > width && width > indent + 1) {  // a word longer than a line: cut it
      const std::size_t room = width - display_width(line);
      line += word.substr(0, room);
      word = word.substr(room);
      flush();
    }
    line += word;
    if (end == text.size()) break;
  }
  if (line != lead && line != pad) out += line + "\n";
  return out;
}

std::string wrap_lines(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
    out += display_width(line) <= width ? line + (end < text.size() ? "\n" : "") : wrap(line, width, std::min(lead + 2, width / 2));
    start = end + 1;
  }
  return out;
}

std::string text_table_in_blocks(const TableRows& rows, const std::vector<Align>& align, std::size_t width) {
  if (rows.empty()) return "";
  std::vector<std::size_t> col(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t j = 0; j < row.size() && j < col.size(); ++j) col[j] = std::max(col[j], display_width(row[j]));
  std::string out;
  for (std::size_t first = 1; first < col.size() || first == 1;) {
    std::size_t used = col[0], last = first;
    while (last < col.size() && (last == first || used + 2 + col[last] <= width)) used += 2 + col[last++];
    TableRows block;
    std::vector<Align> block_align{align.empty() ? Align::left : align[0]};
    for (std::size_t j = first; j < last; ++j) block_align.push_back(j < align.size() ? align[j] : Align::left);
    for (const auto& row : rows) {
      std::vector<std::string> cells{row[0]};
      for (std::size_t j = first; j < last && j < row.size(); ++j) cells.push_back(row[j]);
      block.push_back(cells);
    }
    out += (out.empty() ? "" : "\n") + text_table(block, block_align);
    if (last >= col.size()) break;
    first = last;
  }
  return out;
}

std::string version_runs(const std::vector<std::string>& ids) {
  std::vector<int> numbers;
  std::vector<std::string> prefixes;
  for (const auto& id : ids) {
    std::string prefix;
    numbers.push_back(id_number(id, prefix));
    prefixes.push_back(prefix);
  }
  return runs(numbers, prefixes, [&ids](std::size_t i) { return ids[i]; });
}

std::string id_runs(const std::vector<int>& ids) {
  return runs(ids, std::vector<std::string>(ids.size()), [&ids](std::size_t i) { return std::to_string(ids[i]); });
}

}  // namespace knn
