#include "text_table.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace knn {
namespace {

Align align_of(const std::vector<Align>& align, std::size_t j) { return j < align.size() ? align[j] : Align::left; }

std::string escape_pipes(const std::string& cell) {
  std::string out;
  for (char ch : cell) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

std::string markdown_row(const std::vector<std::string>& cells) {
  std::string line = "|";
  for (const auto& c : cells) line += " " + escape_pipes(c) + " |";
  return line + "\n";
}

}  // namespace

std::string text_table(const TableRows& rows, const std::vector<Align>& align) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (row.size() > width.size()) width.resize(row.size(), 0);
    for (std::size_t j = 0; j < row.size(); ++j) width[j] = std::max(width[j], row[j].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t j = 0; j < row.size(); ++j) {
      if (j) line += "  ";
      line += align_of(align, j) == Align::right ? fmt::format("{:>{}}", row[j], width[j]) : fmt::format("{:<{}}", row[j], width[j]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string markdown_table(const TableRows& rows, const std::vector<Align>& align) {
  std::string out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out += markdown_row(rows[i]);
    if (i > 0) continue;
    std::vector<std::string> rule;
    for (std::size_t j = 0; j < rows[0].size(); ++j) rule.push_back(align_of(align, j) == Align::right ? "---:" : "---");
    out += markdown_row(rule);
  }
  return out;
}

std::vector<Align> label_then_numbers(std::size_t columns) {
  std::vector<Align> align(columns, Align::right);
  if (!align.empty()) align[0] = Align::left;
  return align;
}

}  // namespace knn
