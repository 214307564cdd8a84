// Every output of a run checked before the first measurement (type, writability, collision with
// any input), --dump-answers written atomically, a failed final write that keeps the journal, and
// output names the command line refuses. Each test runs the knnbench binary on a tiny case with the
// CPU version v0 (issue 43, "Data loss").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using knn::testing::run;
using knn::testing::tmp_path;

const std::string kFast = " --warmup 0 --min-samples 1 --max-samples 3 --min-time 0 --max-noise 0 --quiet ";
const std::string kAdhoc = " --version v0 --k 4 --m 8 --n 64 --topk 4" + kFast;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// A scratch folder of its own for each test.
std::string scratch(const std::string& name) {
  const std::string dir = tmp_path("guard-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A 2-D little-endian .npy (version 1.0), written here independently of the program's writer.
template <class T>
void write_npy(const std::string& path, const std::vector<T>& v, std::size_t rows, std::size_t cols, const char* descr) {
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
}

// Case 501 read from files: queries, references and a ground truth computed here by brute force in
// double precision, so a run on it validates and passes.
struct DataCase {
  std::string dir, matrix, queries, references, truth;
};
DataCase data_case(const std::string& name, const std::string& queries_name = "q.npy") {
  DataCase d;
  d.dir = scratch(name);
  d.matrix = d.dir + "/matrix.json", d.queries = d.dir + "/" + queries_name, d.references = d.dir + "/r.npy", d.truth = d.dir + "/gt.npy";
  const std::size_t k = 4, m = 8, n = 64, topk = 4;
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> q(m * k), r(n * k);
  for (float& x : q) x = u(rng);
  for (float& x : r) x = u(rng);
  std::vector<std::int32_t> gt;
  for (std::size_t i = 0; i < m; ++i) {
    std::vector<std::pair<double, int>> all;
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::size_t c = 0; c < k; ++c) s += std::pow(double(q[i * k + c]) - double(r[j * k + c]), 2);
      all.emplace_back(s, int(j));
    }
    std::sort(all.begin(), all.end());
    for (std::size_t t = 0; t < topk; ++t) gt.push_back(all[t].second);
  }
  write_npy(d.queries, q, m, k, "<f4");
  write_npy(d.references, r, n, k, "<f4");
  write_npy(d.truth, gt, m, topk, "<i4");
  std::ofstream(d.matrix) << R"({"schema_version": 1, "cases": [{"id": 501, "k": 4, "m": 8, "n": 64, "topk": 4, "queries_file": ")" +
                                 queries_name + R"(", "references_file": "r.npy", "ground_truth_file": "gt.npy"}]})";
  return d;
}

// Runs knnbench through the shell in a forked child, after `prepare` (there, before exec); code 77
// when `prepare` returns false (not permitted here).
template <class Prepare>
knn::testing::Run run_in_child(Prepare prepare, const std::string& args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!prepare()) ::_exit(77);
    const std::string cmd = std::string(KNN_BINARY) + " " + args + " >" + log + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(log)};
}

// Files may not grow past `limit` bytes (RLIMIT_FSIZE), SIGXFSZ ignored: a write past it fails with
// EFBIG ("File too large"), as a full disk fails with ENOSPC.
knn::testing::Run run_with_file_limit(const std::string& args, rlim_t limit, const std::string& log) {
  return run_in_child(
      [limit] {
        const rlimit lim{limit, limit};
        ::signal(SIGXFSZ, SIG_IGN);
        return ::setrlimit(RLIMIT_FSIZE, &lim) == 0;
      },
      args, log);
}

// A private mount namespace where `dir` is a 64 KiB tmpfs.
knn::testing::Run run_on_small_tmpfs(const std::string& dir, const std::string& args, const std::string& log) {
  return run_in_child(
      [&dir] {
        return ::unshare(CLONE_NEWNS) == 0 && ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
               ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=64k") == 0;
      },
      args, log);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

// An output onto any input of a case (queries, references, ground truth), the matrix or the
// results' journal is refused before anything is written, naming the flag, the path and the input;
// the same run with free outputs passes (so the refusal is the guard's, not a bad case).
TEST(OutputsGuard, AnOutputOntoAnInputIsRefusedAndTheInputKept) {
  const DataCase d = data_case("inputs");
  const std::string truth_bytes = slurp(d.truth), queries_bytes = slurp(d.queries), config = "--config " + d.matrix + kFast + " --version v0";
  fs::create_symlink(d.truth, d.dir + "/link-to-gt.npy");
  struct Bad {
    std::string args, expect;
  };
  const std::vector<Bad> bad = {
      {"--csv " + d.truth, "--csv " + d.truth + ": is the ground truth of case 501 (ground_truth_file); refusing to overwrite an input"},
      {"--json " + d.truth, "--json " + d.truth + ": is the ground truth of case 501 (ground_truth_file)"},
      {"--md " + d.dir + "/link-to-gt.npy", "is the ground truth of case 501 (ground_truth_file)"},
      {"--md " + d.dir + "/./q.npy", "is the queries of case 501 (queries_file)"},
      {"--csv " + d.references, "is the references of case 501 (references_file)"},
      {"--md " + d.matrix, "is the matrix (--config)"},
      {"--json " + d.dir + "/out.json --md " + d.dir + "/out.json.journal", "are the same file"},
  };
  for (const Bad& b : bad) {
    const auto r = run(KNN_BINARY, config + " " + b.args);
    EXPECT_EQ(r.code, 2) << b.args << ": " << r.out;
    EXPECT_TRUE(contains(r.out, b.expect)) << b.args << ": " << r.out;
    EXPECT_EQ(slurp(d.truth), truth_bytes) << b.args << ": the ground truth changed";
    EXPECT_EQ(slurp(d.queries), queries_bytes) << b.args << ": the queries changed";
  }
  EXPECT_FALSE(fs::exists(d.dir + "/out.json")) << "written before the refusal";
  const auto ok = run(KNN_BINARY, config + " --json " + d.dir + "/out.json --csv " + d.dir + "/out.csv");
  EXPECT_EQ(ok.code, 0) << ok.out;
}

// --dump-answers into the data folder, where the queries file has the name of v0's dump: refused
// before the run (the queries stay), as is a dump name that is a symbolic link (its target outside
// the folder stays) or a directory.
TEST(OutputsGuard, DumpNamesNeverReplaceAnInputNorFollowALink) {
  const DataCase d = data_case("dumpnames", "case501-v0-indices.npy");
  const std::string queries_bytes = slurp(d.queries), config = "--config " + d.matrix + kFast + " --version v0";
  const auto onto = run(KNN_BINARY, config + " --json " + d.dir + "/o.json --dump-answers " + d.dir);
  EXPECT_EQ(onto.code, 2) << onto.out;
  EXPECT_TRUE(contains(onto.out, "--dump-answers " + d.queries + ": is the queries of case 501 (queries_file)")) << onto.out;
  EXPECT_EQ(slurp(d.queries), queries_bytes);
  EXPECT_FALSE(fs::exists(d.dir + "/o.json")) << "the run began";

  const std::string dumps = scratch("dumplinks"), outside = scratch("outside") + "/precious.txt";
  std::ofstream(outside) << "keep me";
  fs::create_symlink(outside, dumps + "/case501-v0-distances.npy");
  const auto link = run(KNN_BINARY, config + " --json " + dumps + "/o.json --dump-answers " + dumps);
  EXPECT_EQ(link.code, 2) << link.out;
  EXPECT_TRUE(contains(link.out, "case501-v0-distances.npy is a symbolic link")) << link.out;
  EXPECT_EQ(slurp(outside), "keep me");
  EXPECT_TRUE(fs::is_symlink(dumps + "/case501-v0-distances.npy"));

  fs::remove(dumps + "/case501-v0-distances.npy");
  fs::create_directories(dumps + "/case501-v0-indices.npy");
  const auto dir = run(KNN_BINARY, config + " --json " + dumps + "/o.json --dump-answers " + dumps);
  EXPECT_EQ(dir.code, 2) << dir.out;
  EXPECT_TRUE(contains(dir.out, "case501-v0-indices.npy is a directory")) << dir.out;
  EXPECT_FALSE(fs::exists(dumps + "/o.json")) << "the run began";
}

// Outputs that cannot be written are found before the run: a directory, a socket, a block device,
// a folder that takes no new file (sysfs, even for root), a journal that is a directory or a FIFO.
// The results file is not even begun (it gets its header when the run starts).
TEST(OutputsGuard, UnwritableOutputsAreFoundBeforeTheRun) {
  const std::string dir = scratch("types"), json = dir + "/r.json";
  fs::create_directories(dir + "/adir");
  const std::string sock = dir + "/s.sock";
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  const bool have_socket = s >= 0 && ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  const bool have_block = ::mknod((dir + "/blk").c_str(), S_IFBLK | 0600, makedev(7, 200)) == 0;
  struct Bad {
    std::string args, expect;
  };
  std::vector<Bad> bad = {
      {"--json " + dir + "/adir", "--json " + dir + "/adir: is a directory"},
      {"--json " + json + " --md " + dir + "/adir", "--md " + dir + "/adir: is a directory"},
      {"--json " + json + " --csv /sys/knnbench-probe.csv", "--csv /sys/knnbench-probe.csv: the folder /sys cannot take a new file"},
      {"--json " + json + " --dump-answers /sys/kernel", "--dump-answers /sys/kernel: the folder /sys/kernel cannot take a new file"},
      {"--json " + json + " --dump-answers " + dir + "/afile", "--dump-answers " + dir + "/afile: is a regular file: expected a folder"},
  };
  std::ofstream(dir + "/afile") << "x";
  if (have_socket) bad.push_back({"--json " + json + " --csv " + sock, "--csv " + sock + ": is a socket"});
  if (have_block) bad.push_back({"--json " + json + " --md " + dir + "/blk", ": is a block device"});
  for (const Bad& b : bad) {
    const auto r = run("timeout 60 " + std::string(KNN_BINARY), kAdhoc + b.args);
    EXPECT_EQ(r.code, 2) << b.args << ": " << r.out;
    EXPECT_TRUE(contains(r.out, b.expect)) << b.args << ": " << r.out;
    EXPECT_FALSE(fs::exists(json)) << b.args << ": the run began before the refusal";
  }
  // The journal the results file will have: a directory, or a FIFO that would block its open.
  fs::create_directories(json + ".journal");
  const auto jdir = run("timeout 60 " + std::string(KNN_BINARY), kAdhoc + "--json " + json);
  EXPECT_EQ(jdir.code, 2) << jdir.out;
  EXPECT_TRUE(contains(jdir.out, "its journal " + json + ".journal is a directory")) << jdir.out;
  fs::remove(json + ".journal");
  ASSERT_EQ(::mkfifo((json + ".journal").c_str(), 0600), 0);
  const auto jfifo = run("timeout 60 " + std::string(KNN_BINARY), kAdhoc + "--json " + json);
  EXPECT_EQ(jfifo.code, 2) << jfifo.out;
  EXPECT_TRUE(contains(jfifo.out, "is a FIFO")) << jfifo.out;
  EXPECT_FALSE(fs::exists(json));
  if (s >= 0) ::close(s);
  if (!have_socket || !have_block) GTEST_SKIP() << "socket or block-device node not made here: those two cases skipped, not run";
}

// A FIFO output without a reader fails at once with "no reader" (the run never starts, never
// blocks), for a run and for `report`; with a reader there, the reader gets the document once.
TEST(OutputsGuard, AFifoWithoutAReaderFailsAtOnceWithAReaderItIsWritten) {
  const std::string dir = scratch("fifo"), fifo = dir + "/out.md", json = dir + "/r.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto none = run("timeout 60 " + std::string(KNN_BINARY), kAdhoc + "--json " + json + " --md " + fifo);
  EXPECT_EQ(none.code, 2) << none.out;
  EXPECT_TRUE(contains(none.out, "--md " + fifo + ": a FIFO with no reader")) << none.out;
  EXPECT_FALSE(fs::exists(json)) << "the run began";

  // A reader present from the start (opened without waiting), and a writer of the test's own held
  // open so that the reader sees the end of the document only when the test closes it.
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  const int keep = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  ASSERT_TRUE(rd >= 0 && keep >= 0);
  const auto with = run("timeout 60 " + std::string(KNN_BINARY), kAdhoc + "--json " + json + " --md " + fifo);
  ::close(keep);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(rd, buf, sizeof buf)) > 0;) got.append(buf, std::size_t(n));
  ::close(rd);
  EXPECT_EQ(with.code, 0) << with.out;
  ASSERT_TRUE(contains(got, "| v0 ")) << got;
  EXPECT_EQ(count_of(got, got.substr(0, got.find('\n'))), 1) << "the document came more than once: " << got;

  const auto report = run("timeout 60 " + std::string(KNN_BINARY), "report " + json + " --md " + fifo);
  EXPECT_EQ(report.code, 2) << report.out;
  EXPECT_TRUE(contains(report.out, "a FIFO with no reader")) << report.out;
}

// ENOSPC-like failure during a dump (simulated: RLIMIT_FSIZE makes a write past 64 KiB fail with
// EFBIG): the big case's answer is not written and leaves no file nor temporary, the message names
// the case and version, the run goes on, every measurement is in the results, and the exit code is 2.
TEST(OutputsGuard, AFailedDumpLeavesNoTornFileAndTheRunGoesOn) {
  const std::string dir = scratch("dumpfail"), dumps = dir + "/answers", json = dir + "/r.json", matrix = dir + "/m.json";
  std::ofstream(matrix) << R"({"schema_version": 1, "cases": [{"id": 1, "k": 4, "m": 8, "n": 64, "topk": 4},
    {"id": 2, "k": 4, "m": 4096, "n": 64, "topk": 16}, {"id": 3, "k": 4, "m": 8, "n": 64, "topk": 2}]})";
  const auto r = run_with_file_limit("--config " + matrix + kFast + " --version v0 --json " + json + " --dump-answers " + dumps, 64 << 10,
                                     dir + "/log");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "--dump-answers: case 2 v0: answer not written")) << r.out;
  EXPECT_TRUE(contains(r.out, dumps + "/case2-v0-indices.npy: write failed (File too large)")) << r.out;
  EXPECT_TRUE(contains(r.out, "1 answer not written")) << r.out;
  EXPECT_FALSE(fs::exists(dumps + "/case2-v0-indices.npy"));
  EXPECT_FALSE(fs::exists(dumps + "/case2-v0-distances.npy"));
  for (const auto& e : fs::directory_iterator(dumps)) EXPECT_FALSE(contains(e.path().string(), ".tmp.")) << e.path() << " left behind";
  // The cases before and after have their answers, whole: header + 8 rows of topk int32.
  EXPECT_GE(fs::file_size(dumps + "/case1-v0-indices.npy"), 128u + 8 * 4 * 4);
  EXPECT_GE(fs::file_size(dumps + "/case3-v0-distances.npy"), 128u + 8 * 2 * 4);
  std::ifstream in(json);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << slurp(json);
  ASSERT_EQ(doc["results"].size(), 3u) << "a measurement was lost";
  EXPECT_TRUE(contains(doc["results"][1]["note"].get<std::string>(), "answer not dumped")) << doc["results"][1];
  EXPECT_EQ(doc["results"][1]["status"], "pass");
  EXPECT_FALSE(fs::exists(json + ".journal"));
}

// Answers that cannot fit in the dump folder's free space (a 64 KiB tmpfs; the case's two arrays
// take 512 KiB) are refused before the run; answers that fit are written there.
TEST(OutputsGuard, DumpsThatCannotFitAreRefusedBeforeTheRun) {
  const std::string dir = scratch("space"), dumps = dir + "/answers", json = dir + "/r.json", matrix = dir + "/m.json";
  fs::create_directories(dumps);
  std::ofstream(matrix) << R"({"schema_version": 1, "cases": [{"id": 1, "k": 4, "m": 8, "n": 64, "topk": 4},
    {"id": 2, "k": 4, "m": 4096, "n": 64, "topk": 16}]})";
  const std::string args = "--config " + matrix + kFast + " --version v0 --json " + json + " --dump-answers " + dumps;
  const auto big = run_on_small_tmpfs(dumps, args, dir + "/big.log");
  if (big.code == 77) GTEST_SKIP() << "no private mount namespace with a tmpfs here: test skipped, not run";
  EXPECT_EQ(big.code, 2) << big.out;
  EXPECT_TRUE(contains(big.out, "--dump-answers " + dumps + ": the answers of this run need")) << big.out;
  EXPECT_FALSE(fs::exists(json)) << "the run began";
  const auto small = run_on_small_tmpfs(dumps, args + " --case 1", dir + "/small.log");
  EXPECT_EQ(small.code, 0) << small.out;
}

// The final write of the results file fails (simulated: RLIMIT_FSIZE between the journal's size
// and the whole file's, EFBIG): the journal stays, the message says where the results are and how
// `knnbench report` reads them, the final table is printed once, and the report does read them.
TEST(OutputsGuard, AFailedFinalWriteKeepsTheJournalAndSaysWhere) {
  const std::string dir = scratch("finalfail"), json = dir + "/r.json", md = dir + "/r.md";
  const std::string args = "--version v0 --k 4 --m 8 --n 64 --topk 4 --warmup 0 --min-samples 3 --max-samples 3 --min-time 0 --max-noise 0";
  ASSERT_EQ(run(KNN_BINARY, args + " --quiet --json " + dir + "/whole.json").code, 0);
  const std::size_t whole = fs::file_size(dir + "/whole.json");
  std::ifstream in(dir + "/whole.json");
  const std::size_t compact = nlohmann::json::parse(in).dump().size();  // more than the journal holds
  ASSERT_GT(whole, compact + 400) << "the pretty file is not much larger than the compact one: no limit fits between";
  const auto r = run_with_file_limit(args + " --json " + json + " --md " + md, rlim_t(compact + (whole - compact) / 2), dir + "/log");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "File too large")) << r.out;
  EXPECT_TRUE(contains(r.out, "kept in the journal " + json + ".journal")) << r.out;
  EXPECT_TRUE(contains(r.out, "knnbench report " + json)) << r.out;
  EXPECT_EQ(count_of(r.out, "Median wall time"), 1) << r.out;
  ASSERT_TRUE(fs::exists(json + ".journal"));
  EXPECT_TRUE(contains(slurp(md), "| v0 ")) << "the markdown after the failed results file was not written";
  // report must not write onto that journal: it holds the only copy of the results.
  const std::string journal = slurp(json + ".journal");
  const auto onto_journal = run(KNN_BINARY, "report " + json + " --md " + json + ".journal");
  EXPECT_EQ(onto_journal.code, 2) << onto_journal.out;
  EXPECT_TRUE(contains(onto_journal.out, "its journal")) << onto_journal.out;
  EXPECT_EQ(slurp(json + ".journal"), journal);
  const auto rebuilt = run(KNN_BINARY, "report " + json + " --md " + dir + "/again.md");
  EXPECT_EQ(rebuilt.code, 0) << rebuilt.out;
  EXPECT_TRUE(contains(slurp(dir + "/again.md"), "| v0 ")) << slurp(dir + "/again.md");
}

// A character device gets the document once, at the end, with no journal beside it: /dev/full (every
// write fails with ENOSPC) would lose every finished result, so any device but /dev/null or a
// terminal is refused before the run, for each output, and nothing is begun; /dev/null still takes
// a run's --json (the markdown beside it is written).
TEST(OutputsGuard, ADeviceOtherThanDevNullOrATerminalIsRefusedBeforeTheRun) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here: not run";
  const std::string dir = scratch("device"), json = dir + "/r.json", md = dir + "/r.md";
  for (const std::string flag : {"--json", "--md", "--csv"}) {
    const std::string others = flag == "--json" ? " --md " + md : " --json " + json;
    const auto r = run("timeout 60 " + std::string(KNN_BINARY), kAdhoc + flag + " /dev/full" + others);
    EXPECT_EQ(r.code, 2) << flag << ": " << r.out;
    EXPECT_TRUE(contains(r.out, flag + " /dev/full: is a character device (1:7) other than /dev/null or a terminal")) << r.out;
    EXPECT_TRUE(contains(r.out, "would lose every finished result")) << r.out;
    EXPECT_FALSE(fs::exists(json) || fs::exists(md)) << flag << ": the run began before the refusal";
  }
  const auto null = run("timeout 60 " + std::string(KNN_BINARY), kAdhoc + "--json /dev/null --md " + md);
  EXPECT_EQ(null.code, 0) << null.out;
  EXPECT_TRUE(contains(slurp(md), "| v0 ")) << slurp(md);
}

// An output in a folder that does not exist: the folder is made when the outputs are checked,
// before the run (relative and absolute paths); one that cannot be made (a path through a regular
// file) is refused then, naming the flag and the folder, and nothing is begun.
TEST(OutputsGuard, AMissingOutputFolderIsMadeOrRefusedBeforeTheRun) {
  const std::string dir = scratch("mdfolder"), json = dir + "/r.json";
  const auto made = run("cd " + dir + " && timeout 60 " + std::string(KNN_BINARY), kAdhoc + "--json r.json --md dd/x.md --csv " + dir + "/ee/ff/x.csv");
  EXPECT_EQ(made.code, 0) << made.out;
  EXPECT_TRUE(contains(slurp(dir + "/dd/x.md"), "| v0 ")) << made.out;
  EXPECT_TRUE(fs::exists(dir + "/ee/ff/x.csv")) << made.out;
  fs::remove(json);
  std::ofstream(dir + "/afile") << "x";
  for (const std::string flag : {"--md", "--csv"}) {
    const auto r = run("timeout 60 " + std::string(KNN_BINARY), kAdhoc + "--json " + json + " " + flag + " " + dir + "/afile/dd/x.out");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_TRUE(contains(r.out, flag + " " + dir + "/afile/dd/x.out: cannot create the folder " + dir + "/afile/dd")) << r.out;
    EXPECT_FALSE(fs::exists(json)) << flag << ": the run began before the refusal";
  }
}

// A full disk during the run (simulated: RLIMIT_FSIZE above the results file's header, below what
// the journal grows to over 12 cases): the journal append that fails stops the run with exit 2 and
// a message that names the --json file, the result, the reason, and where the results booked
// before it are; `knnbench report` reads them from the header and the journal.
TEST(OutputsGuard, AJournalWriteThatFailsMidRunNamesTheResultsFileAndWhereTheResultsAre) {
  const std::string dir = scratch("journalfull"), json = dir + "/r.json", matrix = dir + "/m.json";
  std::string cases;
  for (int id = 0; id < 12; ++id) cases += fmt::format("{}{{\"id\": {}, \"k\": 4, \"m\": 8, \"n\": 64, \"topk\": 4}}", id ? ", " : "", id);
  std::ofstream(matrix) << R"({"schema_version": 1, "cases": [)" + cases + "]}";
  const std::string args = "--config " + matrix + " --version v0 --warmup 0 --min-samples 3 --max-samples 3 --min-time 0 --max-noise 0 --quiet";
  ASSERT_EQ(run(KNN_BINARY, args + " --json " + dir + "/whole.json").code, 0);
  std::ifstream in(dir + "/whole.json");
  nlohmann::json whole = nlohmann::json::parse(in);
  std::size_t journal = 64;  // its first line, then one compact line per result
  for (const auto& r : whole["results"]) journal += r.dump().size() + 1;
  whole["results"] = nlohmann::json::array();
  const std::size_t header = whole.dump(1).size() + 1;
  // Above the header and two results' lines, below the whole journal: the run stops after result 2.
  const std::size_t per_result = (journal - 64) / 12, limit = std::max(header + 100, 64 + per_result * 5 / 2);
  ASSERT_GT(journal, limit + 2 * per_result) << "the journal does not outgrow the header: no limit fits between";
  const auto r = run_with_file_limit(args + " --json " + json, rlim_t(limit), dir + "/log");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "--json " + json + ": result ")) << r.out;
  EXPECT_TRUE(contains(r.out, "could not be booked in its journal (" + json + ".journal: write failed (File too large))")) << r.out;
  EXPECT_TRUE(contains(r.out, "kept in the journal " + json + ".journal beside " + json)) << r.out;
  EXPECT_TRUE(contains(r.out, "knnbench report " + json)) << r.out;
  ASSERT_TRUE(fs::exists(json + ".journal")) << r.out;
  const auto rebuilt = run(KNN_BINARY, "report " + json + " --md " + dir + "/again.md");
  EXPECT_EQ(rebuilt.code, 0) << rebuilt.out;
  EXPECT_GE(count_of(slurp(dir + "/again.md"), "| v0 "), 1) << slurp(dir + "/again.md");
}

// Output names the command line refuses, each exit 2 naming the flag.
TEST(OutputsGuard, OutputNamesTheCommandLineRefuses) {
  const std::string dir = scratch("names");
  struct Bad {
    std::string args, expect;
  };
  const std::vector<Bad> bad = {
      {"--dump-answers ''", "--dump-answers '': expected a folder name, not an empty value"},
      {"--dump-answers -", "--dump-answers -: standard output is not a folder"},
      {"--json - --md -", "--json - and --md -: both to standard output"},
      {"--json " + dir + "/r.json --md - --csv /dev/stdout", "--md - and --csv /dev/stdout: both to standard output"},
      {"--json " + dir + "/r.json --md '" + dir + "/a\nb.md'", "--md '" + dir + "/a\\x0ab.md': the path holds a control character"},
      {"--json " + dir + "/r.json --csv '" + dir + "/a\tb.csv'", "--csv '" + dir + "/a\\x09b.csv'"},
  };
  for (const Bad& b : bad) {  // run in `dir`, so that a folder called "-" would be made there
    const auto r = run("cd " + dir + " && " + KNN_BINARY, kAdhoc + b.args);
    EXPECT_EQ(r.code, 2) << b.args << ": " << r.out;
    EXPECT_TRUE(contains(r.out, b.expect)) << b.args << ": " << r.out;
  }
  EXPECT_FALSE(fs::exists(dir + "/-")) << "a folder called '-' was made";
  EXPECT_TRUE(fs::is_empty(dir)) << "something was written";
  const auto report = run(KNN_BINARY, "report " + dir + "/none.json --md - --csv -");
  EXPECT_EQ(report.code, 2) << report.out;
  EXPECT_TRUE(contains(report.out, "both to standard output")) << report.out;
}

// Two outputs that are one file however they are spelled (./x, an absolute path, a/../x, a link to a
// file not yet written) are refused before the run, and nothing is written; report's two outputs too.
TEST(OutputsGuard, TwoOutputsSpelledDifferentlyAreOneFile) {
  const std::string dir = scratch("spelled");
  fs::create_directories(dir + "/a");
  fs::create_symlink("x.json", dir + "/xl.csv");  // dangling until x.json is written
  const std::vector<std::string> bad = {"--json x.json --md ./x.json", "--json x.json --csv " + dir + "/x.json", "--json x.json --csv xl.csv",
                                        "--json r.json --md a/../o.md --csv o.md"};
  for (const std::string& args : bad) {
    const auto r = run("cd " + dir + " && " + KNN_BINARY, kAdhoc + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_TRUE(contains(r.out, "are the same file")) << args << ": " << r.out;
    for (const char* f : {"x.json", "r.json", "o.md"}) EXPECT_FALSE(fs::exists(dir + "/" + f)) << args << ": " << f << " was written";
  }
  ASSERT_EQ(run("cd " + dir + " && " + KNN_BINARY, kAdhoc + "--json base.json").code, 0);
  const auto report = run("cd " + dir + " && " + KNN_BINARY, "report base.json --md rr --csv ./rr");
  EXPECT_EQ(report.code, 2) << report.out;
  EXPECT_FALSE(fs::exists(dir + "/rr"));
}

// A journal that holds a killed run's results is its only copy: a new run onto the same results file
// stops before it would truncate it, and says how to read it.
TEST(OutputsGuard, AKilledRunsJournalIsNotTruncatedByTheNextRun) {
  const std::string dir = scratch("killed");
  ASSERT_EQ(run(KNN_BINARY, kAdhoc + "--json " + dir + "/s.json").code, 0);
  // What a killed run leaves: its header line and a result, no results file written at the end.
  const std::string journal = dir + "/s.json.journal";
  {
    std::ifstream in(dir + "/s.json");
    const nlohmann::json doc = nlohmann::json::parse(in);
    nlohmann::json header = doc;
    header.erase("results");
    std::ofstream(journal) << header.dump() << "\n" << doc["results"][0].dump() << "\n";
  }
  const std::string before = slurp(journal);
  const auto r = run(KNN_BINARY, kAdhoc + "--json " + dir + "/s.json");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "holds finished results of a run that did not end")) << r.out;
  EXPECT_TRUE(contains(r.out, "knnbench report " + dir + "/s.json")) << r.out;
  EXPECT_EQ(slurp(journal), before);
}
