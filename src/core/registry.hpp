#pragma once
// The version registry. Each file in kernels/ ends with one KNN_REGISTER_VERSION(...)
// statement; the harness iterates the registry and never names a version.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/environment.hpp"
#include "core/problem.hpp"
#include "core/timing.hpp"

namespace knn {

// peer: another library's exact kNN (faiss, nanoflann) run and validated like any version.
enum class Family { cpu, gpu, multi_gpu, tree, peer };
const char* to_string(Family f);

// Everything a version may use or report during one call.
struct RunContext {
  TimingSink& timing;
  const Environment& env;  // env.devices are the GPUs selected for this run
  // Which internal path ran, when a version has more than one (for example a fallback
  // taken because a device limit was exceeded). Recorded in the results; never hidden.
  std::string path;
  // Devices this call actually used (ordinals). GPU versions fill it.
  std::vector<int> devices_used;
  // For each `auto` parameter, the choice its rule made on this problem ("int8" -> "on"): recorded
  // in the result beside the parameters' values.
  std::map<std::string, std::string> chosen;
  // A path that costs time to format (v15's runs to hundreds of characters, several µs, which the
  // smallest calls would otherwise time) may be left here instead of in `path`; whoever reads the
  // path after the call formats it then (resolve_path).
  std::function<std::string()> path_later;
};

// The call's path: `path_later` formatted (once) if the version left one, else `path`.
inline const std::string& resolve_path(RunContext& ctx) {
  if (ctx.path_later) {
    ctx.path = ctx.path_later();
    ctx.path_later = nullptr;
  }
  return ctx.path;
}

// One instance per timed call: build() constructs the index (trees only), query() answers.
class VersionInstance {
 public:
  virtual ~VersionInstance() = default;
  virtual void build(const Problem& /*problem*/, RunContext& /*ctx*/) {}
  virtual void query(const Problem& problem, Neighbors out, RunContext& ctx) = 0;
};

// How many GPUs a version needs.
enum class GpuNeed { none, one, all_selected };

struct VersionDesc {
  std::string id;     // "v0", "v1", ...; peers "p-<library>-<method>"
  std::string title;  // one line
  Family family = Family::cpu;
  GpuNeed gpus = GpuNeed::none;
  bool has_build = false;  // true when build() does real work (trees)
  // Answers self-join cases (Problem::self_join: never the query itself). A version that leaves
  // it false is skipped on them with the reason "does not answer self-joins".
  bool self_join = false;
  // Under mpirun with more than one rank: every rank runs it in lockstep, each with only its shard
  // of the references (Problem::shard_begin/shard_n), and rank 0's answer is the result. Versions
  // that leave it false run on rank 0 alone, with every reference, while the other ranks wait.
  bool shards_references = false;
  // Returns a skip reason when the version cannot run this problem here, nothing otherwise.
  // The harness itself already skips GPU versions when no device is present.
  std::function<std::optional<std::string>(const Problem&, const Environment&)> supports;
  // Device memory one call needs on each GPU it uses (bytes). When given, the harness checks it
  // against the device's free memory before running and skips with "needs X GiB, device has Y GiB".
  std::function<std::size_t(const Problem&, const Environment&)> device_bytes;
  // Host memory one call needs beyond the inputs and the answers the harness holds (bytes): trees,
  // copies, scratch. When given, the harness checks it (plus the answers) against what the process
  // can still allocate, RLIMIT_AS included, and skips with "needs X GiB ..., Y GiB available".
  std::function<std::size_t(const Problem&, const Environment&)> host_bytes;
  std::function<std::unique_ptr<VersionInstance>()> make;
  // The variants the version takes (`--param ID.NAME=VALUE`): every one it reads from
  // Environment::params, declared here with its kind, default and help.
  std::vector<ParamDecl> params;
};

// Adapts a plain query function (brute-force versions have no build step).
using QueryFn = void (*)(const Problem&, Neighbors, RunContext&);
std::function<std::unique_ptr<VersionInstance>()> query_only(QueryFn fn);

// Version ids in numeric order: v2 before v10; ties by text. Ids without a number after their first
// letter (the peers, "p-faiss-flat") come after every numbered one, in text order.
bool version_less(const std::string& a, const std::string& b);

class Registry {
 public:
  static Registry& instance();
  bool add(VersionDesc desc);  // throws on a duplicate id
  // Sorted by version number (v2 before v10).
  const std::vector<VersionDesc>& versions() const { return versions_; }
  const VersionDesc* find(const std::string& id) const;

 private:
  std::vector<VersionDesc> versions_;
};

}  // namespace knn

#define KNN_DETAIL_CONCAT2(a, b) a##b
#define KNN_DETAIL_CONCAT(a, b) KNN_DETAIL_CONCAT2(a, b)
// Registers a version at static-initialisation time: KNN_REGISTER_VERSION(make_desc());
#define KNN_REGISTER_VERSION(...) \
  static const bool KNN_DETAIL_CONCAT(knn_registered_, __LINE__) = ::knn::Registry::instance().add(__VA_ARGS__)
