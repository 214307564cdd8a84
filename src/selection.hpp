#pragma once
// Parsing shared by the run and compare selections: comma lists, case-id ranges, version order.
#include <string>
#include <vector>

namespace knn {

// "v1,v3" "v8" → {"v1", "v3", "v8"}; empty items are dropped.
std::vector<std::string> split_commas(const std::vector<std::string>& specs);

// "11" → [11, 11]; "8-11" → [8, 11]. False for anything else (or lo > hi).
bool parse_case_range(const std::string& item, int& lo, int& hi);

// Version ids in numeric order: v2 before v10; ties by text.
bool version_less(const std::string& a, const std::string& b);

}  // namespace knn
