#pragma once
// What a run measures: the cases, versions and devices its flags select, and the parsing shared
// with compare (comma lists, case-id ranges). (The order of version ids, version_less, is the
// registry's: core/registry.hpp.)
#include <string>
#include <vector>

#include "core/environment.hpp"
#include "core/registry.hpp"
#include "matrix.hpp"

namespace knn {

// "v1,v3" "v8" → {"v1", "v3", "v8"}; empty items are dropped.
std::vector<std::string> split_commas(const std::vector<std::string>& specs);

// "11" → [11, 11]; "8-11" → [8, 11]. False for anything else (or lo > hi).
bool parse_case_range(const std::string& item, int& lo, int& hi);

// Unknown ids throw ConfigError naming the flag and listing the valid ones. Items of one flag add up
// (--case 0,3 takes both); --case and --group intersect (--case 9 --group smoke: case 9 if it is in
// smoke), and an empty intersection is an error. Versions take ranges too (v10-v12) and family names
// (tree, peer; "peers" is peer): every registered version of that family.
std::vector<Case> select_cases(const Matrix& mx, const std::vector<std::string>& case_specs, const std::vector<std::string>& groups);
std::vector<const VersionDesc*> select_versions(const std::vector<std::string>& version_specs);
// An ordinal that is not present is an error naming what is, unless no device is present at all:
// then the result is empty and the GPU versions skip with `none_note` as the run's device note.
std::vector<DeviceInfo> select_devices(const std::vector<DeviceInfo>& all, const std::string& spec, const std::string& none_note);

}  // namespace knn
