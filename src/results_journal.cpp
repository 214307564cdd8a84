#include "results_journal.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "output_file.hpp"
#include "results_schema.hpp"

namespace knn {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw ConfigError(fmt::format("{}: {} ({})", path, what, std::strerror(err)));
}

void write_line(int fd, const std::string& line, const std::string& path) {
  write_all(fd, line, path);
  if (::fdatasync(fd) != 0 && errno != EINVAL) fail(path, "fdatasync failed", errno);
}

}  // namespace

std::string journal_path(const std::string& results_path) { return results_path + ".journal"; }

Journal::Journal(std::string results_path, const std::string& date_utc) : path_(journal_path(results_path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, "cannot create the journal", errno);
  write_line(fd_, nlohmann::ordered_json{{"journal_of", "knnbench"}, {"date_utc", date_utc}}.dump() + "\n", path_);
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

void Journal::append(const nlohmann::ordered_json& result) { write_line(fd_, result.dump() + "\n", path_); }

void Journal::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
}

int merge_journal(const std::string& results_path, nlohmann::json& doc) {
  const std::string path = journal_path(results_path);
  std::ifstream in(path, std::ios::binary);
  if (!in || !doc.is_object()) return 0;
  std::string line;
  if (!std::getline(in, line)) return 0;
  const nlohmann::json head = nlohmann::json::parse(line, nullptr, false);
  const auto meta = doc.find("meta");
  const auto text = [](const nlohmann::json& obj, const char* key) {
    const auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (!head.is_object() || text(head, "journal_of") != "knnbench" || meta == doc.end() || !meta->is_object() || text(head, "date_utc").empty() ||
      text(head, "date_utc") != text(*meta, "date_utc"))
    return 0;  // another run's journal (or not one): the file stands alone
  auto& results = doc["results"];
  // The final write holds every result: a journal left by a kill between that write and its
  // removal adds nothing.
  if (!results.is_array() || !results.empty()) return 0;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  int merged = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json r = nlohmann::json::parse(lines[i], nullptr, false);
    if (r.is_discarded()) {
      if (i + 1 == lines.size()) break;  // the write the process died in
      throw SchemaError(fmt::format("{}: line {}: not valid JSON", path, i + 2));
    }
    results.push_back(std::move(r));
    ++merged;
  }
  (*meta)["complete"] = false;
  return merged;
}

}  // namespace knn
