#include "matrix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "datafile.hpp"
#include "core/errors.hpp"
#include "core/params.hpp"

namespace knn {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxMatrixBytes = 16u << 20;

// Printable, bounded text for messages: control characters and non-ASCII bytes escaped,
// at most 60 characters, so an error stays one readable line.
std::string printable(const std::string& raw, std::size_t limit = 60) {
  std::string s;
  for (unsigned char ch : raw) {
    if (s.size() > limit) {
      s += "...";
      break;
    }
    if (ch == '\\' || ch == '"') s += fmt::format("\\{}", char(ch));
    else if (ch < 0x20 || ch >= 0x7f) s += fmt::format("\\x{:02x}", ch);
    else s += char(ch);
  }
  return s;
}

// Short rendering of an offending value. Containers are summarised, never dumped: dumping
// recurses once per nesting level.
std::string show(const json& v) {
  if (v.is_array()) return v.empty() ? "[]" : fmt::format("[an array of {}]", v.size());
  if (v.is_object()) return v.empty() ? "{}" : fmt::format("{{an object of {} fields}}", v.size());
  if (v.is_string()) return "\"" + printable(v.get<std::string>()) + "\"";
  return printable(v.dump());
}

struct Checker {
  std::string file;

  [[noreturn]] void fail(const std::string& path, const json& value, const std::string& expected) const {
    throw ConfigError(fmt::format("{}: {}: {}: expected {}", file, path.empty() ? "/" : path, show(value), expected));
  }

  void only_keys(const json& obj, const std::string& path, std::initializer_list<const char*> allowed) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || it.key() == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        fail(path + "/" + printable(it.key()), it.value(), fmt::format("no unknown field here (allowed: {})", list));
      }
    }
  }

  // "params": {"v16.test": ["box", "median"], "v16.leaf": 128} -> {"v16.test=box,median", "v16.leaf=128"}; only the form
  // is checked here (a repeated value is named): the plan checks the versions and values against the registry.
  std::vector<std::string> params(const json& v, const std::string& path) const {
    if (!v.is_object() || v.empty()) fail(path, v, "an object of \"VERSION.NAME\": a value or a list of values (e.g. {\"v16.test\": [\"box\", \"median\"]})");
    std::vector<std::string> out;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string p = path + "/" + printable(it.key());
      std::string text = it.key() + "=";
      const json values = it.value().is_array() ? it.value() : json::array({it.value()});
      for (const json& x : values) {
        const bool word = x.is_string() && !x.get<std::string>().empty() && x.get<std::string>().find(',') == std::string::npos;
        if (!word && !x.is_number_integer()) fail(p, it.value(), "a word, an integer, or a non-empty list of them");
        text += (&x == &values.front() ? "" : ",") + (word ? x.get<std::string>() : x.dump());
      }
      try {
        parse_param_request(text, p);  // also refuses an empty list ("v16.leaf=")
      } catch (const ParamError& e) {  // its reason after "PATH 'TEXT': ": the repeated value, an empty one, a bad key
        const std::string why = e.what(), reason = why.find("': ") == std::string::npos ? why : why.substr(why.find("': ") + 3);
        fail(p, it.value(), fmt::format("a key VERSION.NAME (e.g. \"v16.leaf\") and distinct values, each a word or an integer ({})", reason));
      }
      out.push_back(std::move(text));
    }
    return out;
  }

  long long integer(const json& v, const std::string& path, long long lo, long long hi, const char* what) const {
    if (!v.is_number_integer()) fail(path, v, fmt::format("{} (an integer in [{}, {}])", what, lo, hi));
    if (v.is_number_unsigned() && v.get<unsigned long long>() > (unsigned long long)LLONG_MAX)
      fail(path, v, fmt::format("{} (an integer in [{}, {}])", what, lo, hi));
    const long long x = v.get<long long>();
    if (x < lo || x > hi) fail(path, v, fmt::format("{} (an integer in [{}, {}])", what, lo, hi));
    return x;
  }

  std::uint64_t seed(const json& v, const std::string& path) const {
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<long long>() < 0)) fail(path, v, "a seed (a non-negative integer below 2^64)");
    return v.get<std::uint64_t>();
  }

  Distribution distribution(const json& v, const std::string& path) const {
    Distribution d;
    if (!v.is_string() || !parse_distribution(v.get<std::string>(), d))
      fail(path, v, "a distribution: \"uniform\", \"clusters\", \"duplicates\" or \"integers\"");
    return d;
  }

  std::vector<std::string> groups(const json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, v, "an array of group names");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const auto& g = v[i];
      const std::string p = fmt::format("{}/{}", path, i);
      if (!g.is_string() || g.get<std::string>().empty()) fail(p, g, "a group name (a non-empty string of a-z, 0-9, '-', '_')");
      for (char c : g.get<std::string>())
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
          fail(p, g, "a group name (a non-empty string of a-z, 0-9, '-', '_')");
      out.push_back(g.get<std::string>());
    }
    return out;
  }

  // A case's data file: a path (relative to the matrix file's folder) to a file whose shape is
  // `rows` × `dim` floats. Only the header and size are read here; values are read at run time.
  // A missing file of a case that says how to fetch it is not an error: `missing` says so.
  void data_file(const json& v, const std::string& path, int dim, int rows, const char* rows_name, std::string& written,
                 std::string& resolved, const std::string& fetch, std::string& missing) const {
    const char* what = "a path to a data file (.npy, .fvecs, .bin, .f32, .csv, IDX or FILE.hdf5:DATASET)";
    if (!v.is_string() || v.get<std::string>().empty()) fail(path, v, what);
    written = v.get<std::string>();
    // Control characters would break the one-line messages and listings that show the path.
    if (std::any_of(written.begin(), written.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20; }))
      fail(path, v, "a path to a data file without control characters");
    const std::filesystem::path given(written);
    resolved = given.is_absolute() ? written : (std::filesystem::path(file).parent_path() / given).string();
    std::error_code ec;
    if (!fetch.empty() && !std::filesystem::exists(data_file_on_disk(resolved), ec)) {
      if (missing.empty()) missing = fmt::format("data file {} not found: fetch it with {}", std::filesystem::path(data_file_on_disk(resolved)).lexically_normal().string(), fetch);
      return;
    }
    try {
      expect_shape(inspect_data_file(resolved, std::uint64_t(dim)), std::uint64_t(rows), rows_name, std::uint64_t(dim));
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}: {}", file, path, e.what()));
    }
  }

  // Every ground truth's shape (m rows, at least topk columns; the header only) now, before any case
  // runs: a case that cannot validate stops the matrix at load and in --list, not after hours of others.
  void truth_shape(const Case& cs, const std::string& p) const {
    if (!cs.missing_data.empty()) return;  // skipped with the command that fetches its files
    const bool own = !cs.ground_truth_path.empty();
    if (!own && (cs.queries_path.empty() || data_format_of(cs.queries_path) != DataFormat::hdf5)) return;
    try {
      inspect_ground_truth(own ? cs.ground_truth_path : cs.queries_path, std::uint64_t(cs.m), cs.topk);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {}: case {}: ground truth: {}", file, p + (own ? "/ground_truth_file" : "/queries_file"), cs.id, e.what()));
    }
  }
};

}  // namespace

namespace {
DataFormat data_format_of_or_empty(const std::string& path) {
  try {
    return data_format_of(path);
  } catch (const ConfigError&) {
    return DataFormat::raw_f32;
  }
}
}  // namespace

Matrix parse_matrix(const std::string& text, const std::string& file_label) {
  const Checker c{file_label};
  if (const auto nul = text.find('\0'); nul != std::string::npos)
    throw ConfigError(fmt::format("{}: invalid JSON at byte {}: a NUL byte (expected a UTF-8 JSON text)", file_label, nul));
  // The callback refuses duplicate keys (the last would win silently). Deep nesting is safe:
  // nlohmann 3.11 parses and destroys without recursion, and show() never dumps containers.
  std::vector<std::vector<std::string>> keys;
  std::string duplicate;
  const json::parser_callback_t guard = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    else if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (event == json::parse_event_t::key && !keys.empty()) {
      const std::string k = parsed.get<std::string>();
      if (std::find(keys.back().begin(), keys.back().end(), k) != keys.back().end() && duplicate.empty()) duplicate = k;
      keys.back().push_back(k);
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text, guard);
  } catch (const json::parse_error& e) {
    throw ConfigError(fmt::format("{}: invalid JSON at byte {}: {}", file_label, e.byte, printable(e.what(), 240)));
  } catch (const json::exception& e) {  // e.g. a number beyond double's range (406), which has no position
    const std::string what = e.what();
    const auto q1 = what.find('\''), q2 = what.rfind('\'');
    const std::string literal = q1 != std::string::npos && q2 > q1 ? what.substr(q1 + 1, q2 - q1 - 1) : "";
    const auto at = literal.empty() ? std::string::npos : text.find(literal);
    if (at != std::string::npos)
      throw ConfigError(fmt::format("{}: invalid JSON at byte {}: number {} is beyond the range of a double", file_label, at, printable(literal)));
    throw ConfigError(fmt::format("{}: invalid JSON: {}", file_label, printable(what, 240)));
  }
  if (!duplicate.empty())
    throw ConfigError(fmt::format("{}: key \"{}\" appears twice in one object: expected unique keys", file_label, printable(duplicate)));
  if (!root.is_object()) c.fail("", root, "a JSON object with \"schema_version\" and \"cases\"");
  c.only_keys(root, "", {"schema_version", "description", "defaults", "params", "cases"});

  Matrix mx;
  mx.file = file_label;
  mx.checksum = to_hex(checksum_bytes(text.data(), text.size()));
  if (!root.contains("schema_version")) c.fail("/schema_version", json(nullptr), fmt::format("schema_version {} (missing)", kMatrixSchemaVersion));
  mx.schema_version = int(c.integer(root["schema_version"], "/schema_version", kMatrixSchemaVersion, kMatrixSchemaVersion, "the schema version"));
  if (root.contains("description") && !root["description"].is_string()) c.fail("/description", root["description"], "a string");

  // The file's "params" apply to every case; a case's own "params" win for the same parameter.
  const std::vector<std::string> file_params = root.contains("params") ? c.params(root["params"], "/params") : std::vector<std::string>{};
  // Defaults apply to every case that does not set the field itself.
  int def_topk = 1;
  Distribution def_dist = Distribution::uniform;
  std::uint64_t def_seed = kDefaultSeed;
  if (root.contains("defaults")) {
    const json& d = root["defaults"];
    if (!d.is_object()) c.fail("/defaults", d, "an object with any of topk, distribution, seed");
    c.only_keys(d, "/defaults", {"topk", "distribution", "seed"});
    if (d.contains("topk")) def_topk = int(c.integer(d["topk"], "/defaults/topk", 1, INT_MAX, "a neighbour count"));
    if (d.contains("distribution")) def_dist = c.distribution(d["distribution"], "/defaults/distribution");
    if (d.contains("seed")) def_seed = c.seed(d["seed"], "/defaults/seed");
  }

  if (!root.contains("cases")) c.fail("/cases", json(nullptr), "an array of cases (missing)");
  const json& cases = root["cases"];
  if (!cases.is_array() || cases.empty()) c.fail("/cases", cases, "a non-empty array of cases");

  std::set<int> ids;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const json& cj = cases[i];
    const std::string p = fmt::format("/cases/{}", i);
    if (!cj.is_object()) c.fail(p, cj, "a case object with id, k, m, n");
    c.only_keys(cj, p, {"id", "k", "m", "n", "topk", "distribution", "max", "self_join", "seed", "groups", "description",
                        "queries_file", "references_file", "validate_queries", "fetch", "ground_truth_file", "params"});
    bool self_join = false;
    if (cj.contains("self_join")) {
      if (!cj["self_join"].is_boolean()) c.fail(p + "/self_join", cj["self_join"], "true or false");
      self_join = cj["self_join"].get<bool>();
    }
    for (const char* req : {"id", "k", "m", "n"})
      if (!cj.contains(req) && !(self_join && std::string(req) == "m"))
        c.fail(p + "/" + req, json(nullptr), fmt::format("field \"{}\" (required{})", req, self_join ? " with or without self_join" : ""));
    Case cs;
    cs.id = int(c.integer(cj["id"], p + "/id", 0, INT_MAX, "a case id"));
    if (!ids.insert(cs.id).second) c.fail(p + "/id", cj["id"], "a unique case id (this one is used twice)");
    cs.dim = int(c.integer(cj["k"], p + "/k", 1, INT_MAX, "the dimension k"));
    cs.n = int(c.integer(cj["n"], p + "/n", 1, INT_MAX, "the reference count n"));
    cs.self_join = self_join;
    if (self_join) {
      // One point set: m is n. A case may say so; any other m is a contradiction.
      if (cj.contains("m") && c.integer(cj["m"], p + "/m", 1, INT_MAX, "the query count m") != cs.n)
        c.fail(p + "/m", cj["m"], fmt::format("m = n = {} or no m: a self-join (case {}) queries its own {} references", cs.n, cs.id, cs.n));
      if (cj.contains("queries_file")) c.fail(p + "/queries_file", cj["queries_file"], "no queries_file in a self-join (the references are the queries)");
      cs.m = cs.n;
    } else {
      cs.m = int(c.integer(cj["m"], p + "/m", 1, INT_MAX, "the query count m"));
    }
    cs.topk = cj.contains("topk") ? int(c.integer(cj["topk"], p + "/topk", 1, INT_MAX, "a neighbour count topk")) : def_topk;
    if (cs.topk > cs.n - (self_join ? 1 : 0))
      c.fail(cj.contains("topk") ? p + "/topk" : "/defaults/topk", json(cs.topk),
             self_join ? fmt::format("topk ≤ n − 1 = {} in case {}: a self-join excludes the point itself", cs.n - 1, cs.id)
                       : fmt::format("topk ≤ n = {}", cs.n));
    cs.distribution = cj.contains("distribution") ? c.distribution(cj["distribution"], p + "/distribution") : def_dist;
    if (cj.contains("max")) {
      if (cs.distribution != Distribution::integers)
        c.fail(p + "/max", cj["max"], fmt::format("no \"max\" unless the distribution is \"integers\" (case {} is {})", cs.id, to_string(cs.distribution)));
      cs.integer_max = std::uint32_t(c.integer(cj["max"], p + "/max", 1, kMaxIntegerMax, "the integers' bound max (values in [0, max))"));
    }
    if (cj.contains("validate_queries"))
      cs.validate_queries = int(c.integer(cj["validate_queries"], p + "/validate_queries", 1, INT_MAX, "a number of queries to validate"));
    cs.seed = cj.contains("seed") ? c.seed(cj["seed"], p + "/seed") : def_seed;
    if (cj.contains("groups")) cs.groups = c.groups(cj["groups"], p + "/groups");
    if (cj.contains("description")) {
      if (!cj["description"].is_string()) c.fail(p + "/description", cj["description"], "a string");
      cs.description = cj["description"].get<std::string>();
    }
    // Products of sizes must stay addressable: dim·n and dim·m as 64-bit element counts.
    const unsigned __int128 qn = (unsigned __int128)cs.dim * cs.m, rn = (unsigned __int128)cs.dim * cs.n;
    if (qn > ((unsigned __int128)1 << 60) || rn > ((unsigned __int128)1 << 60))
      c.fail(p, cj, "k·m and k·n below 2^60 elements");
    if (cj.contains("fetch")) {
      if (!cj["fetch"].is_string() || cj["fetch"].get<std::string>().empty()) c.fail(p + "/fetch", cj["fetch"], "the command that fetches the data files");
      cs.fetch = cj["fetch"].get<std::string>();
    }
    if (cj.contains("queries_file"))
      c.data_file(cj["queries_file"], p + "/queries_file", cs.dim, cs.m, "m", cs.queries_file, cs.queries_path, cs.fetch, cs.missing_data);
    if (cj.contains("references_file"))
      c.data_file(cj["references_file"], p + "/references_file", cs.dim, cs.n, "n", cs.references_file, cs.references_path, cs.fetch,
                  cs.missing_data);
    if (cj.contains("ground_truth_file")) {
      const json& g = cj["ground_truth_file"];
      if (!g.is_string() || g.get<std::string>().empty() || data_format_of_or_empty(g.get<std::string>()) != DataFormat::npy)
        c.fail(p + "/ground_truth_file", g, "a path to an int32 .npy file of neighbour indices (m rows)");
      cs.ground_truth_file = g.get<std::string>();
      const std::filesystem::path given(cs.ground_truth_file);
      cs.ground_truth_path = given.is_absolute() ? cs.ground_truth_file : (std::filesystem::path(file_label).parent_path() / given).string();
      std::error_code ec;
      if (!std::filesystem::exists(cs.ground_truth_path, ec) && cs.missing_data.empty()) {
        if (cs.fetch.empty()) c.fail(p + "/ground_truth_file", g, "an existing file (this one is missing)");
        cs.missing_data = fmt::format("ground truth {} not found: fetch it with {}", std::filesystem::path(cs.ground_truth_path).lexically_normal().string(), cs.fetch);
      }
    }
    c.truth_shape(cs, p);
    cs.param_specs = cj.contains("params") ? c.params(cj["params"], p + "/params") : std::vector<std::string>{};
    for (const std::string& f : file_params)  // the file's, unless the case sets the same parameter
      if (std::none_of(cs.param_specs.begin(), cs.param_specs.end(), [&](const std::string& s) { return s.substr(0, s.find('=')) == f.substr(0, f.find('=')); }))
        cs.param_specs.push_back(f);
    mx.cases.push_back(std::move(cs));
  }
  return mx;
}

Matrix load_matrix(const std::string& path) {
  // A directory or a FIFO is no matrix: say so instead of a size of 2^63 - 1 bytes or a read that
  // waits forever for a writer.
  std::error_code ec;
  const auto kind = std::filesystem::status(path, ec).type();
  if (kind == std::filesystem::file_type::directory) throw ConfigError(fmt::format("{}: is a directory: expected a matrix file", path));
  if (kind != std::filesystem::file_type::regular && kind != std::filesystem::file_type::not_found && !ec)
    throw ConfigError(fmt::format("{}: not a regular file (a FIFO, socket or device): expected a matrix file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open the matrix file", path));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw ConfigError(fmt::format("{}: cannot read the matrix file", path));
  if (std::size_t(size) > kMaxMatrixBytes)
    throw ConfigError(fmt::format("{}: {} bytes: expected a matrix file under {} bytes", path, size, kMaxMatrixBytes));
  in.seekg(0);
  std::string text(std::size_t(size), '\0');
  in.read(text.data(), size);
  if (!in) throw ConfigError(fmt::format("{}: cannot read the matrix file", path));
  return parse_matrix(text, path);
}

}  // namespace knn

namespace knn {

Matrix adhoc_matrix(const std::map<std::string, std::string>& fields) {
  // The text as a JSON integer when it is a whole number (1e6 too), else as it is: the loader then
  // says what it expected of that field.
  auto value = [](const std::string& text) -> json {
    if (text.empty() || text.find_first_not_of("0123456789eE+-.") != std::string::npos) return text;
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (*end != '\0' || !std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) return text;
    return json(static_cast<long long>(d));
  };
  json c = {{"id", 0}, {"groups", {"adhoc"}}};
  for (const auto& [field, text] : fields) c[field] = field == "self_join" ? json(text == "true") : value(text);
  for (const char* req : {"k", "n"})
    if (!c.contains(req)) throw ConfigError(fmt::format("--{}: required for a case given on the command line", req));
  if (!c.contains("m") && !c.value("self_join", false))
    throw ConfigError("--m: required for a case given on the command line (or --self-join)");
  const json doc = {{"schema_version", kMatrixSchemaVersion}, {"cases", {c}}};
  try {
    return parse_matrix(doc.dump(), kAdhocMatrixFile);
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    // topk against n: both flags, and the default when --topk was not given (no "/defaults/topk").
    const bool sj = c.value("self_join", false);
    for (const char* path : {"/defaults/topk:", "/cases/0/topk:"})
      if (msg.rfind(std::string(kAdhocMatrixFile) + ": " + path, 0) == 0 && c["n"].is_number_integer() && (!c.contains("topk") || c["topk"].is_number_integer())) {
        const long long n = c["n"].get<long long>(), topk = c.contains("topk") ? c["topk"].get<long long>() : 1;
        if (topk <= n - (sj ? 1 : 0)) break;
        throw ConfigError(fmt::format("--topk: {}{}: expected topk ≤ n{} = {} (--n {}{}): give a larger --n or a smaller --topk", topk,
                                      c.contains("topk") ? "" : " (the default)", sj ? " − 1" : "", n - (sj ? 1 : 0), n,
                                      sj ? " --self-join: a self-join excludes the point itself" : ""));
      }
    // "command line: /cases/0/n: 0: expected ..." names the flag instead: "--n: 0: expected ...".
    const std::string head = std::string(kAdhocMatrixFile) + ": /cases/0/";
    if (msg.rfind(head, 0) == 0) {
      msg = msg.substr(head.size());
      const std::size_t colon = msg.find(':');
      std::string flag = msg.substr(0, colon);
      std::replace(flag.begin(), flag.end(), '_', '-');
      msg = "--" + flag + msg.substr(colon);
    }
    throw ConfigError(msg);
  }
}

}  // namespace knn
