// What a results file's header may hold: the fields results_to_json writes (results_schema.cpp),
// each of its type. A missing field is allowed (older files lack some; the reader fills in empty
// or zero), an unknown one or one of another type is not: a typo or a hand edit ("complete":
// "yes") must not read as something the run did not record.
#include <fmt/format.h>

#include <initializer_list>

#include "results_schema.hpp"
#include "results_schema_canary.hpp"
#include "results_schema_floor.hpp"

namespace knn {
namespace {

using json = nlohmann::json;

enum class Kind { any, text, text_or_null, integer, count, number, boolean, texts, numbers, object, objects };

struct Field {
  const char* key;
  Kind kind;
};

[[noreturn]] void bad(const std::string& file, const std::string& where, const std::string& what) {
  throw SchemaError(fmt::format("{}: {}: {}", file, where, what));
}

const char* expected(Kind k) {
  switch (k) {
    case Kind::any: return "anything";
    case Kind::text: return "a string";
    case Kind::text_or_null: return "a string or null";
    case Kind::integer: return "an integer";
    case Kind::count: return "an integer >= 0";
    case Kind::number: return "a number";
    case Kind::boolean: return "true or false";
    case Kind::texts: return "an array of strings";
    case Kind::numbers: return "an array of numbers";
    case Kind::object: return "an object";
    case Kind::objects: return "an array of objects";
  }
  return "?";
}

bool all_of(const json& v, bool (json::*is)() const noexcept) {
  if (!v.is_array()) return false;
  for (const auto& x : v)
    if (!(x.*is)()) return false;
  return true;
}

bool fits(const json& v, Kind k) {
  switch (k) {
    case Kind::any: return true;
    case Kind::text: return v.is_string();
    case Kind::text_or_null: return v.is_string() || v.is_null();
    case Kind::integer: return v.is_number_integer();
    case Kind::count: return v.is_number_unsigned() || (v.is_number_integer() && v.get<long long>() >= 0);
    case Kind::number: return v.is_number();
    case Kind::boolean: return v.is_boolean();
    case Kind::texts: return all_of(v, &json::is_string);
    case Kind::numbers: return all_of(v, &json::is_number);
    case Kind::object: return v.is_object();
    case Kind::objects: return all_of(v, &json::is_object);
  }
  return false;
}

// `obj` (at `where`) holds only `fields`, each of its kind.
void check_object(const std::string& file, const json& obj, const std::string& where, std::initializer_list<Field> fields) {
  if (!obj.is_object()) bad(file, where, fmt::format("expected an object, found {}", obj.type_name()));
  for (const auto& [key, value] : obj.items()) {
    const Field* f = nullptr;
    for (const Field& x : fields)
      if (key == x.key) f = &x;
    const std::string at = where.empty() ? key : where + "." + key;
    if (f == nullptr) {
      std::string known;
      for (const Field& x : fields) known += (known.empty() ? "" : ", ") + std::string(x.key);
      bad(file, at, fmt::format("unknown field (a knnbench results file has here: {})", known));
    }
    if (!fits(value, f->kind)) bad(file, at, fmt::format("{}, expected {}", shown_json(value), expected(f->kind)));
  }
}

}  // namespace

void check_header(const json& doc, const std::string& file) {
  using K = Kind;
  check_object(file, doc, "",
               {{"schema_version", K::integer}, {"meta", K::object},   {"host", K::object},     {"devices", K::objects}, {"device_note", K::text_or_null},
                {"mpi", K::object},             {"matrix", K::object}, {"options", K::object}, {"results", K::any},
                {"host_facts", K::object},      {"rates_note", K::text_or_null}});
  check_host_facts(doc, file);  // results_schema_canary.cpp  // results: read_results_document
  if (const auto it = doc.find("meta"); it != doc.end())
    check_object(file, *it, "meta",
                 {{"tool", K::text}, {"knnbench_version", K::text}, {"git_sha", K::text}, {"build_type", K::text}, {"cxx_compiler", K::text},
                  {"cuda_compiler", K::text}, {"cuda_architectures", K::text}, {"cuda_runtime", K::text}, {"cuda_driver", K::text},
                  {"date_utc", K::text}, {"argv", K::texts}, {"complete", K::boolean}});
  if (const auto it = doc.find("host"); it != doc.end()) {
    check_object(file, *it, "host",
                 {{"hostname", K::text}, {"cpu_model", K::text}, {"cores", K::count}, {"memory_bytes", K::count}, {"omp_threads", K::count},
                  {"os", K::text}, {"omp_env", K::text}, {"load_average", K::numbers}, {"cpu_governor", K::text}});
    if (const auto l = it->find("load_average"); l != it->end() && l->size() != 3)
      bad(file, "host.load_average", fmt::format("{}, expected the 1, 5 and 15 minute load averages", l->dump()));
  }
  if (const auto it = doc.find("devices"); it != doc.end())
    for (std::size_t i = 0; i < it->size(); ++i)
      check_object(file, (*it)[i], fmt::format("devices[{}]", i),
                   {{"ordinal", K::count}, {"name", K::text}, {"compute_capability", K::text}, {"sm_count", K::count},
                    {"memory_bytes", K::count}, {"clock_mhz", K::count}, {"memory_clock_mhz", K::count}, {"memory_bus_bits", K::count},
                    {"memory_bandwidth_gbs", K::number}, {"l2_bytes", K::count}, {"pci_bus_id", K::text}, {"warmup_ms", K::number},
                    {"rates", K::any}});
  check_device_rates(doc, file);  // results_schema_floor.cpp
  if (const auto it = doc.find("mpi"); it != doc.end()) {
    check_object(file, *it, "mpi", {{"ranks", K::count}, {"per_rank", K::objects}});
    if (const auto p = it->find("per_rank"); p != it->end())
      for (std::size_t i = 0; i < p->size(); ++i)
        check_object(file, (*p)[i], fmt::format("mpi.per_rank[{}]", i), {{"rank", K::count}, {"host", K::text}, {"gpu", K::text}});
  }
  if (const auto it = doc.find("matrix"); it != doc.end()) check_object(file, *it, "matrix", {{"file", K::text}, {"checksum", K::text}});
  if (const auto it = doc.find("options"); it != doc.end())
    check_object(file, *it, "options",
                 {{"warmup", K::count}, {"min_samples", K::count}, {"max_samples", K::count}, {"min_time_s", K::number},
                  {"max_time_s", K::number}, {"validate", K::boolean}, {"validate_queries", K::count}, {"host_memory", K::text},
                  {"max_noise_pct", K::number}});
  if (const auto it = doc.find("options"); it != doc.end()) {
    const auto lo = it->find("min_samples"), hi = it->find("max_samples");
    if (lo != it->end() && hi != it->end() && lo->get<long long>() > hi->get<long long>())
      bad(file, "options.min_samples", fmt::format("{}, above options.max_samples {}: a run takes at most max_samples", lo->dump(), hi->dump()));
  }
}

}  // namespace knn
