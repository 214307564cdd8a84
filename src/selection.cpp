#include "selection.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/errors.hpp"

namespace knn {
namespace {

bool parse_id(const std::string& s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  out = std::stoi(s);
  return true;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

std::string join_strings(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// The number of "v12", or -1.
int version_number(const std::string& id) {
  int n = -1;
  return id.size() > 1 && id[0] == 'v' && parse_id(id.substr(1), n) ? n : -1;
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

std::vector<Case> select_cases(const Matrix& mx, const std::vector<std::string>& case_specs, const std::vector<std::string>& groups) {
  std::vector<int> valid;
  for (const auto& c : mx.cases) valid.push_back(c.id);
  std::vector<int> wanted;
  for (const auto& item : split_commas(case_specs)) {
    int lo = 0, hi = 0;
    if (!parse_case_range(item, lo, hi)) throw ConfigError(fmt::format("--case {}: expected a case id, a range like 8-11, or a comma list", item));
    for (int id = lo; id <= hi; ++id) {
      if (std::find(valid.begin(), valid.end(), id) == valid.end())
        throw ConfigError(fmt::format("--case {}: no case {} in {} (valid ids: {})", item, id, mx.file, join_ints(valid)));
      wanted.push_back(id);
    }
  }
  std::vector<std::string> known_groups;
  for (const auto& c : mx.cases)
    for (const auto& g : c.groups)
      if (std::find(known_groups.begin(), known_groups.end(), g) == known_groups.end()) known_groups.push_back(g);
  const auto group_list = split_commas(groups);
  for (const auto& g : group_list) {
    if (std::find(known_groups.begin(), known_groups.end(), g) == known_groups.end()) {
      std::string list;
      for (const auto& k : known_groups) list += (list.empty() ? "" : ", ") + k;
      throw ConfigError(fmt::format("--group {}: no such group in {} (groups: {})", g, mx.file, list.empty() ? "none" : list));
    }
  }
  // Each filter is a union of its items; --case and --group together take the cases in both.
  std::vector<Case> out;
  for (const auto& c : mx.cases) {
    const bool by_id = wanted.empty() || std::find(wanted.begin(), wanted.end(), c.id) != wanted.end();
    const bool by_group = group_list.empty() || std::any_of(group_list.begin(), group_list.end(), [&c](const std::string& g) {
                            return std::find(c.groups.begin(), c.groups.end(), g) != c.groups.end();
                          });
    if (by_id && by_group) out.push_back(c);
  }
  if (out.empty())
    throw ConfigError(fmt::format("--case {} --group {}: no case of {} is in both (each filter narrows the other)",
                                  join_strings(split_commas(case_specs)), join_strings(group_list), mx.file));
  return out;
}

std::vector<const VersionDesc*> select_versions(const std::vector<std::string>& version_specs) {
  const auto& all = Registry::instance().versions();
  const auto items = split_commas(version_specs);
  std::vector<const VersionDesc*> out;
  if (items.empty()) {
    for (const auto& v : all) out.push_back(&v);
    return out;
  }
  auto registered = [&all] {
    std::string list;
    for (const auto& v : all) list += (list.empty() ? "" : ", ") + v.id;
    return list;
  };
  auto take = [&out](const VersionDesc* d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  for (const auto& id : items) {
    // A registered id first: the peers' ids ("p-faiss-flat") hold dashes and are no range.
    if (const VersionDesc* d = Registry::instance().find(id)) {
      take(d);
      continue;
    }
    // A family name ("tree", "peer"; "peers" too): every version of that family.
    const std::string family = id == "peers" ? "peer" : id;
    if (std::any_of(all.begin(), all.end(), [&family](const VersionDesc& v) { return family == to_string(v.family); })) {
      for (const auto& v : all)
        if (family == to_string(v.family)) take(&v);
      continue;
    }
    const auto dash = id.find('-');
    if (dash != std::string::npos) {  // "v10-v12": the registered versions numbered from 10 to 12
      const int lo = version_number(id.substr(0, dash)), hi = version_number(id.substr(dash + 1));
      if (lo < 0 || hi < 0 || lo > hi)
        throw ConfigError(fmt::format("--version {}: expected a range like v10-v12 (low to high)", id));
      const std::size_t before = out.size();
      for (const auto& v : all) {
        const int n = version_number(v.id);
        if (n >= lo && n <= hi) take(&v);
      }
      if (out.size() == before) throw ConfigError(fmt::format("--version {}: no version in that range (registered: {})", id, registered()));
      continue;
    }
    std::vector<std::string> families;
    for (const auto& v : all)
      if (std::find(families.begin(), families.end(), to_string(v.family)) == families.end()) families.push_back(to_string(v.family));
    throw ConfigError(fmt::format("--version {}: no such version or family (registered: {}; families: {})", id, registered(), join_strings(families)));
  }
  std::sort(out.begin(), out.end(), [&all](const VersionDesc* a, const VersionDesc* b) { return a - all.data() < b - all.data(); });
  return out;
}

std::vector<DeviceInfo> select_devices(const std::vector<DeviceInfo>& all, const std::string& spec, const std::string& none_note) {
  if (spec == "all" || spec.empty()) return all;
  // No GPU at all: the ordinals cannot be checked, and the GPU versions skip with the reason (the
  // same as without --devices). The spec's syntax is still checked below.
  const bool none_present = all.empty();
  std::vector<DeviceInfo> out;
  std::vector<int> present;
  for (const auto& d : all) present.push_back(d.ordinal);
  for (const auto& item : split_commas({spec})) {
    int lo = -1, hi = -1;
    if (!parse_case_range(item, lo, hi))
      throw ConfigError(fmt::format("--devices {}: expected \"all\", device ordinals like 0,1, or a range like 0-3", spec));
    for (int id = lo; id <= hi; ++id) {
      auto it = std::find_if(all.begin(), all.end(), [id](const DeviceInfo& d) { return d.ordinal == id; });
      if (none_present) continue;
      if (it == all.end())
        throw ConfigError(fmt::format("--devices {}: device {} is not present ({})", spec, id,
                                      all.empty() ? none_note : "present: " + join_ints(present)));
      if (std::none_of(out.begin(), out.end(), [id](const DeviceInfo& d) { return d.ordinal == id; })) out.push_back(*it);
    }
  }
  return out;
}

}  // namespace knn
