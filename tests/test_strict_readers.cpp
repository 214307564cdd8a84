// The readers of `report` and `compare` (results_schema.hpp, results_journal.hpp, compare.hpp)
// take only what the writer writes: inputs that are not regular files, too big, or gzip with junk
// after the stream are refused without blocking; results that contradict themselves are refused
// naming the file, the JSON path and the value; compare never writes onto its inputs; and a SAME
// that only --min-change decided says so.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "cli_support.hpp"
#include "compare.hpp"
#include "report.hpp"  // format_ms
#include "results_journal.hpp"
#include "results_schema.hpp"
#include "stats.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

unsigned fresh_seed() { return std::random_device{}(); }

// A results file the program wrote (two passes of v0): the base every broken copy starts from.
json base_document() {
  std::ifstream in(std::string(KNN_TEST_DATA) + "/corpus/results/base.json");
  return json::parse(in);
}

// The message the reader throws for `doc` read as "f.json", or "" when it reads.
std::string read_error(const json& doc) {
  try {
    knn::read_results_document(doc, "f.json");
  } catch (const knn::SchemaError& e) {
    return e.what();
  }
  return "";
}

std::string file_error(const std::string& path) {
  try {
    knn::read_results_file(path);
  } catch (const knn::SchemaError& e) {
    return e.what();
  }
  return "";
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string gzip(const std::string& text) {
  std::string out(compressBound(uLong(text.size())) + 64, '\0');
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = uInt(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct Scratch {
  fs::path dir = fs::temp_directory_path() / fmt::format("knn_strict_{}_{}", ::getpid(), fresh_seed());
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

// The binary with a deadline: a read that blocks is exit 124, a failure, never a hung suite.
knn::testing::Run run_knnbench(const std::string& args) { return knn::testing::run(std::string("timeout 30 ") + KNN_BINARY, args); }

// A pass of `version` on case `id` with these samples, as the writer writes it (results_to_json).
knn::Result timed_result(int id, const std::string& version, const std::vector<double>& samples) {
  knn::Result r;
  r.problem_case = knn::Case{id, 3, 8, 64, 1, knn::Distribution::uniform, 20240607, {"g"}};
  r.query_checksum = fmt::format("{:016x}", 0x9e3779b97f4a7c15ull * unsigned(id + 1));
  r.reference_checksum = fmt::format("{:016x}", 0xc2b2ae3d27d4eb4full * unsigned(id + 1));
  r.version = version;
  r.title = "a version";
  r.family = "cpu";
  r.status = knn::Status::pass;
  r.samples_ms = samples;
  r.stats = knn::summarize(samples);
  r.validated = true;
  r.validation.checked = r.validation.found = 8;
  r.validation.queries_checked = 8;
  return r;
}

json document_of(const std::vector<knn::Result>& results) {
  knn::RunInfo info;
  info.started_utc = "2026-01-01T00:00:00Z";
  info.complete = true;
  return json::parse(knn::results_to_json(info, results).dump());
}

std::vector<double> around(std::mt19937& rng, double center, int count) {
  std::uniform_real_distribution<double> d(0.99, 1.01);
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(center * d(rng));
  return v;
}

}  // namespace

// ---------------------------------------------------------------- inputs that are not regular files

TEST(StrictReaders, InputsThatAreNotRegularFilesAreRefusedNamingWhatTheyAre) {
  Scratch s;
  const std::string fifo = s / "fifo.json", sock = s / "sock.json", dir = s / "dir.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directories(dir);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  // The FIFO has no writer: a blocking open would wait here for ever.
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {fifo, "is a FIFO (named pipe)"}, {sock, "is a socket"}, {dir, "is a directory"}, {"/dev/zero", "is a character device"}}) {
    const auto start = std::chrono::steady_clock::now();
    const std::string e = file_error(path);
    EXPECT_NE(e.find(path + ": " + kind), std::string::npos) << e;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << path;
  }
  ::close(fd);
}

TEST(StrictReaders, ReportAndCompareGivenAFifoOrADeviceExitTwoAtOnce) {
  Scratch s;
  const std::string fifo = s / "fifo.json", good = s / "good.json", md = s / "out.md";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  write_bytes(good, base_document().dump());
  for (const std::string& args : {fmt::format("report {} --md {}", fifo, md), fmt::format("compare {} {}", fifo, good),
                                  fmt::format("compare {} {}", good, fifo), fmt::format("report /dev/zero --md {}", md)}) {
    const auto r = run_knnbench(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;  // 124: it blocked until the deadline
    EXPECT_TRUE(r.out.find("FIFO") != std::string::npos || r.out.find("/dev/zero: is a character device") != std::string::npos) << r.out;
  }
  EXPECT_FALSE(fs::exists(md));
}

// ---------------------------------------------------------------- size caps and gzip

TEST(StrictReaders, AResultsFileOverTheCapIsRefusedBeforeItIsRead) {
  Scratch s;
  const std::string big = s / "big.json";
  {
    std::ofstream touch(big);
  }
  fs::resize_file(big, std::uintmax_t(4) << 30);  // 4 GiB of zeros, sparse: nothing to read is written
  const auto start = std::chrono::steady_clock::now();
  const std::string e = file_error(big);
  EXPECT_NE(e.find(big + ": 4294967296 bytes, over the 1 GiB (1073741824 bytes)"), std::string::npos) << e;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  const auto r = run_knnbench(fmt::format("report {} --md {}", big, s / "out.md"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("over the 1 GiB"), std::string::npos) << r.out;
}

TEST(StrictReaders, ZerosAndGzipBombsStopAtTheirFirstBytesOrAtTheCap) {
  Scratch s;
  // Zeros, plain: a NUL byte is never JSON text.
  const std::string zeros = s / "zeros.json";
  write_bytes(zeros, std::string(1 << 20, '\0'));
  EXPECT_NE(file_error(zeros).find("zeros.json: a NUL byte at offset 0"), std::string::npos) << file_error(zeros);
  // 2 GiB of zeros in 2048 gzip members of 1 MiB each, about 2 MB on disk.
  const std::string member = gzip(std::string(1 << 20, '\0')), bomb = s / "bomb.json.gz";
  {
    std::ofstream out(bomb, std::ios::binary);
    for (int i = 0; i < 2048; ++i) out << member;
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(file_error(bomb).find("bomb.json.gz: a NUL byte at offset 0"), std::string::npos) << file_error(bomb);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // Blanks are JSON text: those inflate until the cap (here 64 KiB; 1 GiB by default).
  const std::string blanks = s / "blanks.json.gz";
  write_bytes(blanks, gzip(std::string(1 << 20, ' ')));
  try {
    knn::read_input_file(blanks, "a results file", 64 << 10);
    ADD_FAILURE() << "1 MiB inflated under a 64 KiB cap";
  } catch (const knn::SchemaError& e) {
    EXPECT_NE(std::string(e.what()).find("blanks.json.gz: inflates to more than 65536 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(knn::read_input_file(blanks, "a results file", 1 << 20).size(), std::size_t(1) << 20);  // at the cap: read
}

TEST(StrictReaders, GzipWithTrailingDataIsRefusedNamingTheOffsetAndMembersBackToBackRead) {
  Scratch s;
  const std::string text = base_document().dump();
  const std::string packed = gzip(text), junk = s / "junk.json.gz", two = s / "two.json.gz";
  write_bytes(junk, packed + "trailing junk");
  const std::string e = file_error(junk);
  EXPECT_NE(e.find(fmt::format("junk.json.gz: 13 bytes of trailing data after the gzip stream, from byte offset {}", packed.size())),
            std::string::npos)
      << e;
  // gzip(1) reads members back to back as one text: so does the reader.
  write_bytes(two, gzip(text.substr(0, 100)) + gzip(text.substr(100)));
  EXPECT_EQ(knn::read_results_file(two).results.size(), 2u);
  // A stream cut short is still a read error naming the file.
  write_bytes(junk, packed.substr(0, packed.size() / 2));
  EXPECT_NE(file_error(junk).find("junk.json.gz: read error: the gzip stream is cut short"), std::string::npos) << file_error(junk);
}

// ---------------------------------------------------------------- journals

TEST(StrictReaders, AJournalThatIsNotARegularFileIsAnErrorNamingIt) {
  Scratch s;
  json header = base_document();
  header["results"] = json::array();
  const std::string path = s / "r.json";
  write_bytes(path, header.dump());
  EXPECT_EQ(file_error(path), "");
  fs::create_directories(knn::journal_path(path));
  EXPECT_NE(file_error(path).find(path + ".journal: is a directory"), std::string::npos) << file_error(path);
  fs::remove(knn::journal_path(path));
  ASSERT_EQ(::mkfifo(knn::journal_path(path).c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(file_error(path).find(path + ".journal: is a FIFO (named pipe)"), std::string::npos) << file_error(path);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  const auto r = run_knnbench(fmt::format("report {} --md {}", path, s / "out.md"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("r.json.journal: is a FIFO"), std::string::npos) << r.out;
}

TEST(StrictReaders, ABadJournalLineIsNamedByTheJournalAndItsLine) {
  Scratch s;
  const json base = base_document();
  json header = base;
  header["results"] = json::array();
  const std::string path = s / "r.json", journal = knn::journal_path(path);
  write_bytes(path, header.dump());
  const std::string head = json{{"journal_of", "knnbench"}, {"date_utc", base["meta"]["date_utc"]}}.dump() + "\n";
  json bad = base["results"][1];
  bad["case"]["k"] = "three";
  write_bytes(journal, head + base["results"][0].dump() + "\n" + bad.dump() + "\n");
  EXPECT_EQ(file_error(path), journal + ": line 3: result.case.k: expected an integer, found string");
  // A contradiction between lines names both lines.
  write_bytes(journal, head + base["results"][0].dump() + "\n" + base["results"][0].dump() + "\n");
  EXPECT_EQ(file_error(path), journal + ": line 3: result.version: case 0 with v0 again (already line 2: result): a results file holds each (case, version, parameters) once");
  // Not JSON before the last line (a torn last line is the write the run died in, and is dropped).
  write_bytes(journal, head + "{\"case\": \n" + base["results"][1].dump() + "\n");
  EXPECT_EQ(file_error(path), journal + ": line 2: not valid JSON");
  write_bytes(journal, head + base["results"][0].dump() + "\n{\"case\": ");
  const auto doc = knn::read_results_file(path);
  EXPECT_EQ(doc.results.size(), 1u);
  EXPECT_FALSE(doc.info.complete);
}

// ---------------------------------------------------------------- results that contradict themselves

TEST(StrictReaders, TheBaseDocumentReads) { EXPECT_EQ(read_error(base_document()), ""); }

TEST(StrictReaders, ContradictionsAreRefusedNamingFilePathAndValue) {
  struct Breakage {
    const char* expect;
    void (*apply)(json&);
  };
  const std::vector<Breakage> cases{
      {"f.json: results[0].stats.samples: 3, but samples_ms holds 0 samples", [](json& d) { d["results"][0]["samples_ms"] = json::array(); }},
      {"f.json: results[0].stats.samples: 200, but samples_ms holds 3 samples", [](json& d) { d["results"][0]["stats"]["samples"] = 200; }},
      {"f.json: results[0].validation.mismatches: 5, but the validation status is pass",
       [](json& d) { d["results"][0]["validation"]["mismatches"] = 5; }},
      {"f.json: results[0].status: \"pass\", but its validation failed",
       [](json& d) {
         d["results"][0]["validation"]["status"] = "fail";
         d["results"][0]["validation"]["mismatches"] = 1;
       }},
      {"f.json: results[0].validation: missing, expected the validation of a pass result", [](json& d) { d["results"][0].erase("validation"); }},
      {"f.json: results[1].validation: missing", [](json& d) { d["results"][1]["validation"] = nullptr; }},
      {"f.json: results[0].case.topk: 400, expected at most n = 4", [](json& d) { d["results"][0]["case"]["topk"] = 400; }},
      {"f.json: results[0].note: holds an escape, carriage return or delete character", [](json& d) { d["results"][0]["note"] = "\x1b[31mRED"; }},
      {"f.json: results[0].family: \"rocket\": expected cpu, gpu, multi-gpu, tree or peer", [](json& d) { d["results"][0]["family"] = "rocket"; }},
      {"f.json: results[0].validation.queries_checked: 999, but the case has", [](json& d) { d["results"][0]["validation"]["queries_checked"] = 999; }},
      {"f.json: results[0].params.leaf: a parameter name or value that is empty or holds a control character",
       [](json& d) { d["results"][0]["params"] = {{"leaf", "8\x1b"}}; }},
      {"f.json: results[0].case.topk: 4, expected at most n − 1 = 3: a self-join",
       [](json& d) {
         d["results"][0]["case"]["self_join"] = true;
         d["results"][0]["case"]["m"] = 4;
         d["results"][0]["case"]["topk"] = 4;
       }},
      {"f.json: results[0].case.id: -5, expected a case id >= 0", [](json& d) { d["results"][0]["case"]["id"] = -5; }},
      {"f.json: results[0].case.k: 0, expected a dimension k >= 1", [](json& d) { d["results"][0]["case"]["k"] = 0; }},
      {"f.json: results[0].case.m: 0", [](json& d) { d["results"][0]["case"]["m"] = 0; }},
      {"f.json: results[0].case.n: -1", [](json& d) { d["results"][0]["case"]["n"] = -1; }},
      {"f.json: results[0].case.topk: 0", [](json& d) { d["results"][0]["case"]["topk"] = 0; }},
      {"f.json: results[0].version: \"\", expected a version id", [](json& d) { d["results"][0]["version"] = ""; }},
      {"f.json: results[1].version: \"v0\\u001b[31m\", expected a version id (no empty one, no control character)",
       [](json& d) { d["results"][1]["version"] = "v0\x1b[31m"; }},
      {"f.json: results[0].case.checksums.queries: \"zz\", expected 16 lowercase hex digits",
       [](json& d) { d["results"][0]["case"]["checksums"]["queries"] = "zz"; }},
      {"f.json: results[1].case.checksums.references: \"2B79C8B0A17FD85D\", expected 16 lowercase hex digits",
       [](json& d) { d["results"][1]["case"]["checksums"]["references"] = "2B79C8B0A17FD85D"; }},
      {"f.json: results[0].stats.noise_pct: -1, expected a number >= 0", [](json& d) { d["results"][0]["stats"]["noise_pct"] = -1; }},
      {"f.json: results[0].stats.noise_pct: null, expected a number >= 0 for a timed result",
       [](json& d) { d["results"][0]["stats"]["noise_pct"] = nullptr; }},
      {"f.json: meta.complete: \"yes\", expected true or false", [](json& d) { d["meta"]["complete"] = "yes"; }},
      {"f.json: options.validate: 1, expected true or false", [](json& d) { d["options"]["validate"] = 1; }},
      {"f.json: host.cores: -2, expected an integer >= 0", [](json& d) { d["host"]["cores"] = -2; }},
      {"f.json: colour: unknown field (a knnbench results file has here: schema_version, meta,", [](json& d) { d["colour"] = "red"; }},
      {"f.json: meta.complet: unknown field", [](json& d) { d["meta"]["complet"] = true; }},
      {"f.json: results[1].speedup: unknown field (a knnbench result has here: case, version,", [](json& d) { d["results"][1]["speedup"] = 2; }},
      {"f.json: results[0].case.dims: unknown field", [](json& d) { d["results"][0]["case"]["dims"] = 3; }},
      {"f.json: results[0].stats.p99_ms: unknown field", [](json& d) { d["results"][0]["stats"]["p99_ms"] = 1; }},
      {"f.json: results[0].validation.recal: unknown field", [](json& d) { d["results"][0]["validation"]["recal"] = 1; }},
      {"f.json: results[0].phases.query.mean_ms: unknown field", [](json& d) { d["results"][0]["phases"]["query"]["mean_ms"] = 1; }},
      {"f.json: results[0].stats.max_ms: 1, but the maximum of samples_ms is", [](json& d) { d["results"][0]["stats"]["max_ms"] = 1.0; }},
      {"f.json: results[0].stats.mean_ms: 8.2e-06, but the mean of samples_ms is", [](json& d) { d["results"][0]["stats"]["mean_ms"] = 8.2e-6; }},
      {"f.json: results[0].stats.stdev_ms: 0, but the standard deviation of samples_ms is",
       [](json& d) { d["results"][0]["stats"]["stdev_ms"] = 0.0; }},
      {"f.json: results[0].stats.median_noise_pct: 5, but the median's noise of samples_ms is",
       [](json& d) { d["results"][0]["stats"]["median_noise_pct"] = 5.0; }},
      {"f.json: results[0].phases.query.median_ms: 1, but its samples_ms give", [](json& d) { d["results"][0]["phases"]["query"]["median_ms"] = 1.0; }},
      {"f.json: results[0].phases.query.samples: 4, but samples_ms holds 3 samples", [](json& d) { d["results"][0]["phases"]["query"]["samples"] = 4; }},
      {"f.json: results[0].validation.checked: -1, expected a count >= 0", [](json& d) { d["results"][0]["validation"]["checked"] = -1; }},
      {"f.json: results[0].devices_used[0]: -1, expected a device ordinal >= 0", [](json& d) { d["results"][0]["devices_used"] = {-1}; }},
  };
  const json good = base_document();
  for (const auto& c : cases) {
    json bad = good;
    c.apply(bad);
    const std::string e = read_error(bad);
    EXPECT_EQ(e.rfind(c.expect, 0), 0u) << "expected: " << c.expect << "\n     got: " << e;
  }
}

// A fail says why: the writer gives each its reason (the error, or a failed validation's counts). A
// fail whose validation passed and that gives no reason is refused, naming it; with a reason (an
// error after the answer validated) it reads. A header whose options.min_samples is above
// options.max_samples describes no run knnbench makes (it refuses --min-samples above
// --max-samples): refused; equal ones read (the base file has 3 and 3).
TEST(StrictReaders, AFailWithNeitherReasonNorFailedValidationAndMinSamplesAboveMaxAreRefused) {
  json fail = base_document();
  fail["results"][1]["status"] = "fail";
  EXPECT_EQ(read_error(fail).rfind("f.json: results[1].status: \"fail\" with no reason, but its validation passed", 0), 0u) << read_error(fail);
  fail["results"][1]["reason"] = "";
  EXPECT_EQ(read_error(fail).rfind("f.json: results[1].status: \"fail\" with no reason", 0), 0u) << read_error(fail);
  fail["results"][1]["reason"] = "error: the device was lost after the answer was validated";
  EXPECT_EQ(read_error(fail), "");
  json samples = base_document();
  ASSERT_EQ(samples["options"]["max_samples"], 3);
  EXPECT_EQ(read_error(samples), "");
  samples["options"]["min_samples"] = 5;
  EXPECT_EQ(read_error(samples).rfind("f.json: options.min_samples: 5, above options.max_samples 3", 0), 0u) << read_error(samples);
}

// ---------------------------------------------------------------- what the reader still accepts

TEST(StrictReaders, WhatTheWriterWritesReadsBack) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  knn::Result off = timed_result(1, "v3", around(rng, 2.0, 7));
  off.validated = false;  // --no-validate: "off"
  knn::Result one = timed_result(2, "v3", {1.5});  // one sample: no stdev spread, no median interval
  knn::Result skip = timed_result(3, "v3", {});
  skip.status = knn::Status::skip;
  skip.reason = "no CUDA device";
  skip.stats = knn::summarize({});
  knn::Result fail = timed_result(4, "v3", around(rng, 1.0, 4));
  fail.status = knn::Status::fail;
  fail.validation.pass = false;
  fail.validation.mismatches = 3;
  knn::Result self = timed_result(5, "v3", around(rng, 3.0, 5));
  self.problem_case.self_join = true;
  self.problem_case.m = self.problem_case.n;
  self.problem_case.topk = self.problem_case.n - 1;
  self.phase_samples_ms["kernel"] = around(rng, 0.5, 5);
  self.device_phase_samples_ms[1]["h2d"] = around(rng, 0.1, 5);
  const auto doc = knn::read_results_document(document_of({timed_result(0, "v3", around(rng, 2.0, 40)), off, one, skip, fail, self}), "w.json");
  ASSERT_EQ(doc.results.size(), 6u);
  EXPECT_FALSE(doc.results[1].validated);
  EXPECT_EQ(doc.results[2].stats.samples, 1);
  EXPECT_EQ(doc.results[3].status, knn::Status::skip);
  EXPECT_EQ(doc.results[4].validation.mismatches, 3);
  EXPECT_TRUE(doc.results[5].problem_case.self_join);
}

// ---------------------------------------------------------------- compare

TEST(StrictReaders, CompareNeverWritesItsMarkdownOntoAnInput) {
  Scratch s;
  const std::string a = s / "a.json", b = s / "b.json", link = s / "link.json";
  write_bytes(a, base_document().dump());
  write_bytes(b, base_document().dump());
  write_bytes(knn::journal_path(b), "");
  fs::create_symlink(a, link);
  const std::string a_bytes = read_bytes(a), b_bytes = read_bytes(b);
  for (const std::string& md : {a, b, link, knn::journal_path(b)}) {
    const auto r = run_knnbench(fmt::format("compare {} {} --md {}", a, b, md));
    EXPECT_EQ(r.code, 2) << md << "\n" << r.out;
    EXPECT_NE(r.out.find("are the same file"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("knnbench compare: B against A"), std::string::npos) << "the report was printed before the refusal:\n" << r.out;
  }
  EXPECT_EQ(read_bytes(a), a_bytes);
  EXPECT_EQ(read_bytes(b), b_bytes);
  EXPECT_TRUE(fs::is_symlink(link));
  // A FIFO with no reader, a directory: refused before the report, never waited on.
  const std::string fifo = s / "fifo.md";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& md : {fifo, s.dir.string()}) {
    const auto r = run_knnbench(fmt::format("compare {} {} --md {}", a, b, md));
    EXPECT_EQ(r.code, 2) << md << "\n" << r.out;  // 124: it waited for a reader
    EXPECT_NE(r.out.find("--md " + md), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("knnbench compare: B against A"), std::string::npos) << r.out;
  }
  // Elsewhere the markdown is written.
  const auto ok = run_knnbench(fmt::format("compare {} {} --md {}", a, b, s / "r.md"));
  EXPECT_NE(ok.code, 2) << ok.out;
  EXPECT_TRUE(fs::exists(s / "r.md")) << ok.out;
}

TEST(StrictReaders, ASameDecidedByMinChangeSaysWhy) {
  const unsigned seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  // B 1000 times faster on a 0.016 ms call: far beyond --threshold and the noise, yet 0.016 ms.
  const json a = document_of({timed_result(0, "v3", around(rng, 0.016, 40)), timed_result(1, "v3", around(rng, 2.0, 40))});
  const json b = document_of({timed_result(0, "v3", around(rng, 0.000016, 40)), timed_result(1, "v3", around(rng, 2.0, 40))});
  knn::CompareOptions opts;
  opts.file_a = "a.json";
  opts.file_b = "b.json";
  const knn::CompareReport rep = knn::compare_documents(a, b, opts);
  ASSERT_EQ(rep.pairs.size(), 2u);
  EXPECT_EQ(rep.pairs[0].verdict, knn::Verdict::same);
  EXPECT_TRUE(rep.pairs[0].under_min_change);
  EXPECT_FALSE(rep.pairs[1].under_min_change);  // within --threshold: SAME for that reason
  const std::string text = knn::format_compare(rep, false), md = knn::format_compare(rep, true);
  const std::string why = fmt::format("v3 case 0: B changed by {:+.1f}% but only {} ms", rep.pairs[0].effect_pct(),
                                      knn::format_ms(rep.pairs[0].a_median_ms - rep.pairs[0].b_median_ms));
  EXPECT_NE(text.find(why), std::string::npos) << text;
  EXPECT_NE(text.find("under --min-change 0.05 ms: SAME"), std::string::npos) << text;
  EXPECT_NE(md.find(why), std::string::npos) << md;
  EXPECT_EQ(text.find("v3 case 1: B changed"), std::string::npos) << text;
  // --min-change 0: judged by the other rules, FASTER, and no such note.
  opts.min_change_ms = 0;
  const knn::CompareReport off = knn::compare_documents(a, b, opts);
  EXPECT_EQ(off.pairs[0].verdict, knn::Verdict::faster);
  EXPECT_EQ(knn::format_compare(off, false).find("under --min-change"), std::string::npos);
}
