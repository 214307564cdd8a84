// The output writer (src/output_file.cpp): nothing it writes may destroy what a path named before.
// Device nodes are made with mknod in a private temporary folder (root only; skipped with a message
// otherwise): the real /dev nodes are never written to by a test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/errors.hpp"
#include "output_file.hpp"
#include "runner.hpp"

namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("knn_output_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string error_of(const std::string& path, const std::string& content) {
  try {
    knn::write_output_file(path, content);
  } catch (const knn::ConfigError& e) {
    return e.what();
  }
  return "";
}

bool is_char_device(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

}  // namespace

TEST(Output, ARegularFileIsReplacedWholeAndNoTemporaryStays) {
  const fs::path f = scratch("r.json");
  knn::write_output_file(f.string(), "first");
  knn::write_output_file(f.string(), "second");
  EXPECT_EQ(read(f), "second");
  for (const auto& e : fs::directory_iterator(f.parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(Output, ASymlinkStaysALinkAndItsTargetIsReplaced) {
  const fs::path target = scratch("target.md"), link = scratch("link.md");
  std::ofstream(target) << "old";
  fs::remove(link);
  fs::create_symlink(target, link);
  knn::write_output_file(link.string(), "new");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(read(target), "new");
}

TEST(Output, DirectoriesAreRefusedAndNothingIsCreated) {
  const fs::path dir = scratch("adir");
  fs::create_directories(dir);
  const std::string msg = error_of(dir.string(), "x");
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_FALSE(knn::rewritable_output(dir.string()));
  EXPECT_TRUE(knn::rewritable_output(scratch("new.json").string()));
  EXPECT_FALSE(knn::rewritable_output("-"));
}

TEST(Output, DeviceNodesAreWrittenThroughNeverReplaced) {
  const fs::path null_node = scratch("null"), full_node = scratch("full");
  fs::remove(null_node);
  fs::remove(full_node);
  if (::mknod(null_node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 || ::mknod(full_node.c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "mknod not permitted here (needs root): device-node test skipped, not run";
  knn::write_output_file(null_node.string(), "results");
  EXPECT_TRUE(is_char_device(null_node)) << "the null device was replaced by a regular file";
  EXPECT_FALSE(knn::rewritable_output(null_node.string()));
  // A full device: the write fails with the system's reason, and the node stays a node.
  const std::string msg = error_of(full_node.string(), std::string(1 << 16, 'x'));
  EXPECT_NE(msg.find(full_node.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("No space left on device"), std::string::npos) << msg;
  EXPECT_TRUE(is_char_device(full_node));
}

TEST(Output, AnUnwritableFolderSaysWhyAndLeavesNothing) {
  // A failed write removes its temporary and names errno's reason (the full device above covers
  // ENOSPC on a node; here: a folder that cannot be written).
  if (::geteuid() == 0) GTEST_SKIP() << "root can write a read-only folder: permission test skipped, not run";
  const fs::path dir = scratch("ro");
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  const std::string msg = error_of((dir / "r.json").string(), "x");
  fs::permissions(dir, fs::perms::owner_all);
  EXPECT_NE(msg.find("Permission denied"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Output, TheSameFileUnderTwoNamesIsRefused) {
  const fs::path f = scratch("same.json");
  std::ofstream(f) << "{}";
  try {
    knn::refuse_same_files({{"report", f.string()}, {"--md", (f.parent_path() / "." / "same.json").string()}});
    ADD_FAILURE() << "no error";
  } catch (const knn::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("are the same file"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(knn::refuse_same_files({{"--json", f.string()}, {"--md", scratch("other.md").string()}, {"--csv", ""}, {"--md", "-"}}));
}

// Two runs in the same second: the default results names differ (issue 25: they overwrote each other).
TEST(Output, DefaultResultsNamesAreClaimedNeverShared) {
  const std::string stem = scratch("host-20261123T130000Z").string();
  fs::remove(stem + ".json");
  fs::remove(stem + "-2.json");
  const std::string first = knn::claim_default_results_path(stem), second = knn::claim_default_results_path(stem);
  EXPECT_EQ(first, stem + ".json");
  EXPECT_EQ(second, stem + "-2.json");
  EXPECT_TRUE(fs::exists(first) && fs::exists(second));
}
