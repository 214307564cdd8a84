// The malformed-matrix corpus (tests/corpus/matrix/, made by tests/corpus/make_matrix_corpus.py):
// the loader must refuse every file with one ConfigError line that starts with the file's path
// and names a JSON path (or the byte where the JSON breaks); never a crash or another exception.
// Each load runs in a forked child, so a crash fails one file instead of ending the suite.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "matrix.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(KNN_TEST_DATA) / "corpus" / "matrix";

// Inputs the loader still mishandles. Each must still fail a check here; when the loader is fixed
// this test says so and the entry goes. Empty this map and the corpus enforces the whole contract.
const char* const kDeepDump = "crash: the message renders the value with json::dump, which recurses once per level";
const char* const kOverflow = "json::out_of_range (number overflow) escapes: parse_matrix catches only parse_error";
const char* const kRawKey = "unknown keys reach the message unescaped: control characters break the line";
const std::map<std::string, const char*> kKnownLoaderBugs = {
};

// The template every corpus file breaks in one way (as in make_matrix_corpus.py).
const char* const kTemplate = R"({"schema_version":1,"cases":[{"id":0,"k":3,"m":4,"n":16}]})";

struct Outcome {
  enum Kind : char { config_error = 'C', accepted = 'A', other_exception = 'E', crashed = 'S' } kind;
  std::string message;  // what(), or the signal
};

// Loads `path` in a forked child and reports what happened there.
Outcome load_in_child(const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) return {Outcome::other_exception, "pipe() failed"};
  const pid_t pid = fork();
  if (pid < 0) return {Outcome::other_exception, "fork() failed"};
  if (pid == 0) {
    close(fds[0]);
    alarm(30);  // a hang ends as SIGALRM
    std::string out;
    try {
      knn::load_matrix(path);
      out = "A";
    } catch (const knn::ConfigError& e) {
      out = std::string("C") + e.what();
    } catch (const std::exception& e) {
      out = std::string("E") + e.what();
    } catch (...) {
      out = "Ea non-standard exception";
    }
    for (std::size_t done = 0; done < out.size();) {
      const ssize_t w = write(fds[1], out.data() + done, out.size() - done);
      if (w <= 0) break;
      done += std::size_t(w);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  std::array<char, 65536> buf;
  for (ssize_t r; (r = read(fds[0], buf.data(), buf.size())) != 0;) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got.append(buf.data(), std::size_t(r));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return {Outcome::crashed, std::string("signal ") + strsignal(WTERMSIG(status))};
  if (got.empty()) return {Outcome::crashed, "the child exited without a result"};
  return {Outcome::Kind(got[0]), got.substr(1)};
}

// For failure output: control characters shown as \xNN, long messages cut.
std::string printable(const std::string& s, std::size_t limit = 240) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < limit; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  if (s.size() > limit) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

// What is wrong with how the loader treated `path`; empty when it refused it properly.
std::vector<std::string> problems(const Outcome& o, const std::string& path, const std::string& expect) {
  switch (o.kind) {
    case Outcome::accepted:
      return {"accepted"};
    case Outcome::other_exception:
      return {"threw something other than ConfigError: " + printable(o.message)};
    case Outcome::crashed:
      return {"crashed: " + o.message};
    case Outcome::config_error:
      break;
  }
  std::vector<std::string> p;
  const std::string& m = o.message;
  for (unsigned char c : m)
    if (c < 0x20) {  // line breaks, escape sequences, NUL
      p.push_back("the message holds a control character: not one clean line");
      break;
    }
  const std::string prefix = path + ": ";
  if (m.compare(0, prefix.size(), prefix) != 0) {
    p.push_back("the message does not start with the file path");
  } else {
    const std::string rest = m.substr(prefix.size());
    const bool syntax = rest.rfind("invalid JSON at byte ", 0) == 0;
    const bool schema = rest.rfind("/", 0) == 0 && rest.find(": expected ") != std::string::npos;
    const bool size = rest.find(" bytes: expected a matrix file under ") != std::string::npos;
    if (!syntax && !schema && !size) p.push_back("the message names no JSON path and no byte offset");
  }
  if (m.find(expect) == std::string::npos) p.push_back("the message lacks \"" + expect + "\"");
  return p;
}

struct Tally {
  int checked = 0, known = 0;
};

// Loads one file and checks the outcome, honouring kKnownLoaderBugs.
void check_file(const std::string& path, const std::string& name, const std::string& expect, Tally& t) {
  const Outcome o = load_in_child(path);
  const auto p = problems(o, path, expect);
  ++t.checked;
  std::string why;
  for (const auto& s : p) why += "\n    " + s;
  const auto known = kKnownLoaderBugs.find(name);
  if (known != kKnownLoaderBugs.end()) {
    ++t.known;
    EXPECT_FALSE(p.empty()) << name << " is now refused properly: remove it from kKnownLoaderBugs (" << known->second << ")";
    return;
  }
  if (o.kind == Outcome::config_error) why += "\n    message: " + printable(o.message);
  EXPECT_TRUE(p.empty()) << name << ":" << why;
}

std::vector<std::pair<std::string, std::string>> expectations() {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(kCorpus / "expected.tsv");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return out;
}

fs::path scratch_dir() {
  const auto dir = fs::temp_directory_path() / ("knn_corpus_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST(Corpus, HoldsAtLeast200MatricesEachWithAnExpectedMessage) {
  std::map<std::string, bool> listed;
  for (const auto& [name, expect] : expectations()) {
    EXPECT_FALSE(expect.empty()) << name;
    listed[name] = false;
  }
  int files = 0;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const auto it = listed.find(entry.path().filename().string());
    if (it == listed.end())
      ADD_FAILURE() << entry.path().filename() << " has no line in expected.tsv";
    else
      it->second = true;
  }
  for (const auto& [name, seen] : listed) EXPECT_TRUE(seen) << "expected.tsv lists " << name << ", which is not in the corpus";
  EXPECT_GE(files, 200);
  for (const auto& [name, why] : kKnownLoaderBugs)
    EXPECT_TRUE(listed.count(name) || name.rfind("generated_", 0) == 0) << "kKnownLoaderBugs names a missing file " << name;
}

TEST(Corpus, TheTemplateTheFilesBreakIsAccepted) {
  const auto mx = knn::parse_matrix(kTemplate, "template.json");
  ASSERT_EQ(mx.cases.size(), 1u);
  EXPECT_EQ(mx.cases[0].n, 16);
}

TEST(Corpus, EveryMatrixIsRefusedWithOneLineNamingFileAndField) {
  Tally t;
  for (const auto& [name, expect] : expectations()) check_file((kCorpus / name).string(), name, expect, t);
  EXPECT_GE(t.checked, 200);
  std::printf("[ corpus   ] %d matrices checked, %d of them known loader bugs (kKnownLoaderBugs)\n", t.checked, t.known);
}

// Inputs too big to keep as files: nesting far past the stack, and files at and over the 16 MiB cap.
TEST(Corpus, GeneratedDeepAndHugeMatricesAreRefused) {
  const fs::path dir = scratch_dir();
  const std::string deep_arrays = std::string(1000000, '[') + std::string(1000000, ']');
  std::string deep_objects;
  for (int i = 0; i < 100000; ++i) deep_objects += "{\"\":";
  deep_objects += "1" + std::string(100000, '}');
  const std::string case0 = R"({"id":0,"k":3,"m":4,"n":16})";
  constexpr std::size_t kCap = 16u << 20;
  std::string at_cap = R"({"schema_version":1,"cases":[)" + case0 + R"(],"pad":")";
  at_cap += std::string(kCap - at_cap.size() - 2, 'p') + "\"}";

  const std::vector<std::array<std::string, 3>> inputs = {  // name, text, part of the message
      {"generated_deep_arrays_1e6_root_truncated.json", std::string(1000000, '['), "invalid JSON at byte"},
      {"generated_deep_objects_in_k.json", R"({"schema_version":1,"cases":[{"id":0,"m":4,"n":16,"k":)" + deep_objects + "}]}", "/cases/0/k"},
      {"generated_deep_arrays_in_description.json", R"({"schema_version":1,"description":)" + deep_arrays + R"(,"cases":[)" + case0 + "]}",
       "/description"},
      {"generated_deep_arrays_as_cases.json", R"({"schema_version":1,"cases":)" + deep_arrays + "}", "/cases/0"},
      {"generated_at_cap_unknown_field.json", at_cap, "/pad"},
      {"generated_over_cap_whitespace.json", std::string(kCap + 1, ' '), "16777217 bytes"},
      {"generated_over_cap_valid_json.json", std::string(kTemplate) + std::string(kCap, ' '), "bytes: expected a matrix file under"},
  };
  ASSERT_EQ(inputs[4][1].size(), kCap);
  Tally t;
  for (const auto& [name, text, expect] : inputs) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    check_file(path, name, expect, t);
    fs::remove(path);
  }
  fs::remove(dir);
}

// A handful of corpus files through the real binary: exit 2 and one line on stderr.
TEST(Corpus, BinaryExits2WithOneLineOnStderr) {
  for (const char* name : {"truncated_07.json", "empty.json", "nul_in_string.json", "utf8_ff_in_string.json", "bom_utf16le.json",
                           "k_nan.json", "n_string.json", "topk_over_n.json", "duplicate_id.json", "product_k_n_over_2_60.json",
                           "deep_arrays_root_truncated.json", "unknown_case_dims.json"}) {
    const std::string path = (kCorpus / name).string();
    ASSERT_TRUE(fs::exists(path)) << path;
    // stderr only: stdout goes to /dev/null.
    const std::string cmd = std::string("'") + KNN_BINARY + "' --config '" + path + "' --list 2>&1 >/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string err;
    std::array<char, 4096> buf;
    for (std::size_t r; (r = std::fread(buf.data(), 1, buf.size(), p)) > 0;) err.append(buf.data(), r);
    const int status = pclose(p);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    EXPECT_EQ(code, 2) << name << ": " << printable(err);
    EXPECT_EQ(err.rfind("knnbench: " + path + ": ", 0), 0u) << name << ": " << printable(err);
    EXPECT_TRUE(!err.empty() && err.find('\n') == err.size() - 1) << name << " wrote more or less than one line: " << printable(err);
  }
}
