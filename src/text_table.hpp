#pragma once
// The one text-table routine: the screen's summary table, the markdown reports and `compare`
// all lay out rows of cells through it.
#include <string>
#include <vector>

namespace knn {

enum class Align { left, right };
using TableRows = std::vector<std::vector<std::string>>;

// Columns padded to their widest cell, two spaces apart, trailing blanks dropped; one line per
// row. align[j] applies to column j (left where align is shorter than the row).
std::string text_table(const TableRows& rows, const std::vector<Align>& align);
// A markdown pipe table whose first row is the header: under it "---" for a left column and
// "---:" for a right one. A '|' inside a cell is escaped.
std::string markdown_table(const TableRows& rows, const std::vector<Align>& align);
// Left first column, the others right: the shape of every table of numbers with a label column.
std::vector<Align> label_then_numbers(std::size_t columns);

}  // namespace knn
