// The main side of line_table.h: running the helper, lookups, and the
// cache of decoded tables.
#include "src/symbols/line_table.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "base/open_file.h"
#include "base/scoped_fd.h"
#include "capture/container.h"

namespace microscope::symbols {
namespace {

constexpr const char* kHelperName = "microscope-dwarf";

std::string OwnDirectory() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, size_t(n));
  return path.substr(0, path.rfind('/'));
}

// The helper's path: $MICROSCOPE_DWARF_HELPER (tests and benchmarks built
// elsewhere), else beside the executable (a build tree), else where `meson
// install` put it; or why there is none.
const Result<std::string>& HelperPath() {
  static const Result<std::string> path = []() -> Result<std::string> {
    std::vector<std::string> candidates;
    if (const char* env = getenv("MICROSCOPE_DWARF_HELPER"); env != nullptr && *env != '\0') {
      candidates.push_back(env);
    } else {
      candidates.push_back(OwnDirectory() + "/" + kHelperName);
      candidates.push_back(std::string(MICROSCOPE_PLUGIN_DIR) + "/" + kHelperName);
    }
    for (const std::string& c : candidates) {
      if (access(c.c_str(), X_OK) == 0) return c;
    }
    return Status::Error(StatusCode::kUnavailable,
                         std::string("DWARF reader ") + kHelperName + " not found (looked for " +
                             candidates.front() +
                             (candidates.size() > 1 ? " and " + candidates[1] : "") + ")");
  }();
  return path;
}

}  // namespace

void LineTable::Lookup(uint64_t vaddr, std::vector<SourceFrame>* out) const {
  out->clear();
  uint32_t file = kNoName, line = 0;
  const auto& rows = data_.rows;
  auto row =
      std::upper_bound(rows.begin(), rows.end(), vaddr,
                       [](uint64_t a, const LineTableData::Row& r) { return a < r.address; });
  if (row != rows.begin() && (row - 1)->file != kNoName) {
    file = (row - 1)->file;
    line = (row - 1)->line;
  }
  uint32_t scope = kNoName;
  const auto& segments = data_.segments;
  auto seg =
      std::upper_bound(segments.begin(), segments.end(), vaddr,
                       [](uint64_t a, const LineTableData::Segment& s) { return a < s.start; });
  if (seg != segments.begin()) scope = (seg - 1)->scope;
  if (scope == kNoName) {
    if (file != kNoName) out->push_back({kNoName, file, line});
    return;
  }
  // Innermost first: each function at the line reached in it, then its
  // caller at the call site. Parents come earlier in the table, so the walk
  // ends.
  while (scope != kNoName) {
    const LineTableData::Scope& s = data_.scopes[scope];
    out->push_back({s.name, file, line});
    file = s.call_file;
    line = s.call_line;
    scope = s.parent;
  }
}

std::string DefaultCacheDir() {
  if (const char* dir = getenv("MICROSCOPE_CACHE_DIR")) return dir;  // "" disables
  if (const char* xdg = getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/microscope";
  }
  if (const char* home = getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.cache/microscope";
  }
  return "";
}

namespace {

// The child's 'E' message: a StatusCode byte, then the text. The child is
// untrusted like its input, so a code this build does not know is kUnknown
// (and a reply without one is the reader failing, not "not found").
Status ChildError(std::span<const uint8_t> reply) {
  if (reply.empty()) return Status::Error("the DWARF reader failed without a message");
  uint8_t code = reply[0];
  if (code == uint8_t(StatusCode::kOk) || code > uint8_t(StatusCode::kInternal)) {
    code = uint8_t(StatusCode::kUnknown);
  }
  return Status::Error(StatusCode(code), std::string(reply.begin() + 1, reply.end()));
}

// Runs `helper` on `file` (its stdin) with `path` and our pid as arguments,
// its stdout to `out`, nothing of this process's environment, default signal
// handling and none blocked.
Result<pid_t> SpawnHelper(const std::string& helper, const std::string& path, int file, int out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, file, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string parent = std::to_string(getpid());
  std::string name = path, program = helper;
  char* argv[] = {program.data(), name.data(), parent.data(), nullptr};
  char* env[] = {nullptr};
  pid_t child = 0;
  const int spawned = posix_spawn(&child, helper.c_str(), &actions, &attr, argv, env);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) {
    return Status::Error(StatusCode::kUnavailable,
                         "cannot run " + helper + ": " + std::string(strerror(spawned)));
  }
  return child;
}

// What a helper's reply was, read to its end, past `max_reply` bytes or
// past the deadline.
struct Reply {
  std::vector<uint8_t> bytes;
  bool too_big = false;
  bool timed_out = false;
};

Reply ReadReply(int fd, uint64_t max_reply, std::chrono::steady_clock::time_point deadline) {
  Reply r;
  uint8_t buf[1 << 16];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      return r;
    }
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, int(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return r;
    if (r.bytes.size() + size_t(n) > max_reply) {
      r.too_big = true;
      return r;
    }
    r.bytes.insert(r.bytes.end(), buf, buf + n);
  }
}

// libdwarf 20210528 is not safe on hostile input (a damaged
// .debug_rnglists header makes it free a block twice and abort), and debug
// files are untrusted. So the helper reads each file in a process of its
// own, started with posix_spawn (never a fork of this threaded process,
// whose other threads' locks the child would inherit held), and sends the
// table back serialized ('K' + the cache format) or an error ('E', one byte
// of StatusCode, then the message); this side validates it like a cache
// entry. A crash costs the module its lines, never the process.
Result<LineTableData> ReadInChild(const std::string& path) {
  ASSIGN_OR_RETURN(std::string helper, HelperPath());
  ScopedFd file(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (!file.valid()) return Status::Error(std::string("cannot open: ") + strerror(errno));
  if (fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::Error(StatusCode::kInvalidArgument, "not a regular file");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::Error(std::string("pipe: ") + strerror(errno));
  ScopedFd read_end(fds[0]);
  ScopedFd write_end(fds[1]);
  ASSIGN_OR_RETURN(pid_t child, SpawnHelper(helper, path, file.get(), write_end.get()));
  file.Reset();
  write_end.Reset();
  // A row, scope or segment of the table is 16 bytes, and each takes at
  // least a byte of the file (a line program's opcode, a DIE, a range
  // entry), in sections of their own: a reply over 32 times the file's size
  // is not a table of this file, and is not kept.
  const uint64_t max_reply =
      std::clamp<uint64_t>(32 * uint64_t(st.st_size), uint64_t(32) << 20, uint64_t(2) << 30);
  // Damaged DWARF can also make a reader loop: it gets a deadline.
  constexpr int kDeadlineSeconds = 120;
  Reply reply =
      ReadReply(read_end.get(), max_reply,
                std::chrono::steady_clock::now() + std::chrono::seconds(kDeadlineSeconds));
  std::vector<uint8_t>& bytes = reply.bytes;
  read_end.Reset();
  if (reply.timed_out || reply.too_big) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (reply.timed_out) {
    return Status::Error(StatusCode::kDataLoss,
                         "the DWARF reader took over " + std::to_string(kDeadlineSeconds) +
                             " s on this file and was stopped: damaged DWARF");
  }
  if (reply.too_big) {
    return Status::Error(StatusCode::kDataLoss,
                         "the DWARF reader's table passed " + std::to_string(max_reply >> 20) +
                             " MiB (32 times the file's size) and was not kept: damaged DWARF");
  }
  if (WIFSIGNALED(status)) {
    return Status::Error(StatusCode::kDataLoss,
                         "the DWARF reader (libdwarf) crashed on this file (signal " +
                             std::to_string(WTERMSIG(status)) + "): damaged DWARF");
  }
  if (bytes.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Error("the DWARF reader failed (exit status " + std::to_string(status) + ")");
  }
  if (bytes[0] == 'E') return ChildError(std::span<const uint8_t>(bytes).subspan(1));
  auto data = ParseLineTable(std::span<const uint8_t>(bytes).subspan(1), 0, 0);
  if (!data.ok()) return data.status().WithContext("the DWARF reader's table");
  return data;
}

}  // namespace

Result<std::unique_ptr<LineTable>> OpenLineTable(const std::string& path,
                                                 const std::string& build_id_hex,
                                                 const std::string& cache_dir) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return Status::Error(std::string("cannot stat: ") + strerror(errno));
  int64_t mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  std::string cached;
  if (!cache_dir.empty() && build_id_hex.size() >= 4) {
    cached = cache_dir + "/lines/" + build_id_hex + ".lines";
    auto bytes = ReadRegularFile(cached);
    if (bytes.ok()) {
      auto data = ParseLineTable(*bytes, uint64_t(st.st_size), mtime_ns);
      if (data.ok()) {
        auto table = std::make_unique<LineTable>(std::move(data).value());
        table->from_cache = true;
        return table;
      }
      // A stale or damaged entry is replaced below.
    }
  }
  ASSIGN_OR_RETURN(LineTableData data, ReadInChild(path));
  if (!cached.empty()) {
    // Best effort: a cache that cannot be written only costs time.
    std::error_code ec;
    std::filesystem::create_directories(cache_dir + "/lines", ec);
    (void)capture::WriteFileAtomically(cached,
                                       SerializeLineTable(data, uint64_t(st.st_size), mtime_ns));
  }
  return std::make_unique<LineTable>(std::move(data));
}

}  // namespace microscope::symbols
