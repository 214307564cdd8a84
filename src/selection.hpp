#pragma once
// Parsing shared by the run and compare selections: comma lists and case-id ranges.
// (The order of version ids, version_less, is the registry's: core/registry.hpp.)
#include <string>
#include <vector>

#include "core/registry.hpp"

namespace knn {

// "v1,v3" "v8" → {"v1", "v3", "v8"}; empty items are dropped.
std::vector<std::string> split_commas(const std::vector<std::string>& specs);

// "11" → [11, 11]; "8-11" → [8, 11]. False for anything else (or lo > hi).
bool parse_case_range(const std::string& item, int& lo, int& hi);

}  // namespace knn
