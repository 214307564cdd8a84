#include "core/registry.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <stdexcept>


namespace knn {

const char* to_string(Family f) {
  switch (f) {
    case Family::cpu: return "cpu";
    case Family::gpu: return "gpu";
    case Family::multi_gpu: return "multi-gpu";
    case Family::tree: return "tree";
    case Family::peer: return "peer";
  }
  return "?";
}

bool version_less(const std::string& a, const std::string& b) {
  const auto number = [](const std::string& id) {
    if (id.size() < 2) return -1L;
    return id[1] >= '0' && id[1] <= '9' ? std::strtol(id.c_str() + 1, nullptr, 10) : LONG_MAX;
  };
  const long na = number(a), nb = number(b);
  return na != nb ? na < nb : a < b;
}

namespace {
class QueryOnly final : public VersionInstance {
 public:
  explicit QueryOnly(QueryFn fn) : fn_(fn) {}
  void query(const Problem& p, Neighbors out, RunContext& ctx) override { fn_(p, out, ctx); }

 private:
  QueryFn fn_;
};
}  // namespace

std::function<std::unique_ptr<VersionInstance>()> query_only(QueryFn fn) {
  return [fn] { return std::make_unique<QueryOnly>(fn); };
}

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

bool Registry::add(VersionDesc desc) {
  if (find(desc.id) != nullptr) throw std::logic_error("version registered twice: " + desc.id);
  if (!desc.make) throw std::logic_error("version without entry point: " + desc.id);
  versions_.push_back(std::move(desc));
  std::stable_sort(versions_.begin(), versions_.end(),
                   [](const VersionDesc& a, const VersionDesc& b) { return version_less(a.id, b.id); });
  return true;
}

const VersionDesc* Registry::find(const std::string& id) const {
  for (const auto& v : versions_)
    if (v.id == id) return &v;
  return nullptr;
}

}  // namespace knn
