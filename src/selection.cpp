#include "selection.hpp"

#include <string>

namespace knn {
namespace {

bool parse_id(const std::string& s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  out = std::stoi(s);
  return true;
}

}  // namespace

std::vector<std::string> split_commas(const std::vector<std::string>& specs) {
  std::vector<std::string> out;
  for (const auto& s : specs) {
    std::size_t start = 0;
    while (start <= s.size()) {
      const std::size_t c = s.find(',', start);
      const std::string item = s.substr(start, c == std::string::npos ? std::string::npos : c - start);
      if (!item.empty()) out.push_back(item);
      if (c == std::string::npos) break;
      start = c + 1;
    }
  }
  return out;
}

bool parse_case_range(const std::string& item, int& lo, int& hi) {
  const auto dash = item.find('-');
  if (dash == std::string::npos) return parse_id(item, lo) && parse_id(item, hi);
  return parse_id(item.substr(0, dash), lo) && parse_id(item.substr(dash + 1), hi) && lo <= hi;
}

}  // namespace knn
