// The main side of line_table.h: the plugin loader, lookups, and the cache
// of decoded tables.
#include "src/symbols/line_table.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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

// GCC says __SANITIZE_ADDRESS__; clang says __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define MICROSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MICROSCOPE_ASAN 1
#endif
#endif
#ifndef MICROSCOPE_ASAN
#define MICROSCOPE_ASAN 0
#endif

namespace microscope::symbols {
namespace {

constexpr const char* kPluginName = "libmicroscope_dwarf.so";

std::string OwnDirectory() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, size_t(n));
  return path.substr(0, path.rfind('/'));
}

struct Plugin {
  ReadDwarfLinesFn read = nullptr;
  std::string error;
};

const Plugin& LoadPlugin() {
  static Plugin plugin;
  static std::once_flag once;
  std::call_once(once, [] {
    // $MICROSCOPE_DWARF_PLUGIN (tests and benchmarks built elsewhere), else
    // beside the executable (a build tree), else where `meson install` put it.
    std::vector<std::string> candidates;
    if (const char* env = getenv("MICROSCOPE_DWARF_PLUGIN"); env != nullptr && *env != '\0') {
      candidates.push_back(env);
    } else {
      std::string dir = OwnDirectory();
      candidates.push_back(dir + "/" + kPluginName);
      candidates.push_back(std::string(MICROSCOPE_PLUGIN_DIR) + "/" + kPluginName);
    }
    for (const std::string& path : candidates) {
      if (access(path.c_str(), R_OK) != 0) continue;
#if MICROSCOPE_ASAN
      // AddressSanitizer refuses RTLD_DEEPBIND. A sanitizer build loads
      // the plugin (built without the sanitizers) in a link namespace of
      // its own: there too libdwarf's names resolve to libdwarf. Only the
      // forked child calls it, and leaves by _exit: nothing the plugin's
      // allocator made is freed by ours.
      void* handle = dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
#else
      // DEEPBIND: the plugin and libdwarf resolve libdwarf's names to
      // libdwarf, not to libdw's functions of the same names.
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
#endif
      if (handle == nullptr) {
        plugin.error = std::string("cannot load ") + path + ": " + dlerror();
        return;
      }
      plugin.read = reinterpret_cast<ReadDwarfLinesFn>(dlsym(handle, kReadDwarfLinesSymbol));
      if (plugin.read == nullptr) plugin.error = path + " has no " + kReadDwarfLinesSymbol;
      return;
    }
    plugin.error = std::string("DWARF reader ") + kPluginName + " not found (looked in " +
                   candidates.front() + (candidates.size() > 1 ? " and " + candidates[1] : "") +
                   ")";
  });
  return plugin;
}

}  // namespace

namespace {

constexpr char kCacheMagic[8] = {'M', 'S', 'L', 'I', 'N', 'E', 'S', '1'};

struct CacheHeader {
  char magic[8];
  uint64_t file_size;  // of the DWARF file the table was read from
  int64_t mtime_ns;
  uint32_t rows, scopes, segments, strings;
  uint64_t string_bytes;
};

template <typename T>
void Append(std::vector<uint8_t>* out, const T* data, size_t n) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + n * sizeof(T));
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

std::vector<uint8_t> SerializeLineTable(const LineTableData& d, uint64_t file_size,
                                        int64_t mtime_ns) {
  CacheHeader h{};
  std::memcpy(h.magic, kCacheMagic, sizeof(h.magic));
  h.file_size = file_size;
  h.mtime_ns = mtime_ns;
  h.rows = uint32_t(d.rows.size());
  h.scopes = uint32_t(d.scopes.size());
  h.segments = uint32_t(d.segments.size());
  h.strings = uint32_t(d.strings.size());
  std::vector<uint32_t> offsets{0};
  for (const std::string& s : d.strings) offsets.push_back(offsets.back() + uint32_t(s.size()));
  h.string_bytes = offsets.back();
  std::vector<uint8_t> out;
  Append(&out, &h, 1);
  Append(&out, d.rows.data(), d.rows.size());
  Append(&out, d.scopes.data(), d.scopes.size());
  Append(&out, d.segments.data(), d.segments.size());
  Append(&out, offsets.data(), offsets.size());
  for (const std::string& s : d.strings) Append(&out, s.data(), s.size());
  return out;
}

Result<LineTableData> ParseLineTable(std::span<const uint8_t> bytes, uint64_t file_size,
                                     int64_t mtime_ns) {
  CacheHeader h;
  if (bytes.size() < sizeof(h)) return Status::Error("shorter than its header");
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kCacheMagic, sizeof(h.magic)) != 0) return Status::Error("bad magic");
  if (h.file_size != file_size || h.mtime_ns != mtime_ns) {
    return Status::Error("made from another version of the file");
  }
  // Each part no larger than the file before they are added up: a huge
  // string_bytes must not wrap the sum around to the file's size.
  if (h.string_bytes > bytes.size()) return Status::Error("string bytes exceed the file");
  uint64_t need = sizeof(h) + uint64_t(h.rows) * sizeof(LineTableData::Row) +
                  uint64_t(h.scopes) * sizeof(LineTableData::Scope) +
                  uint64_t(h.segments) * sizeof(LineTableData::Segment) +
                  (uint64_t(h.strings) + 1) * 4 + h.string_bytes;
  if (need != bytes.size()) {
    return Status::Error("size " + std::to_string(bytes.size()) + " does not match its counts (" +
                         std::to_string(need) + ")");
  }
  LineTableData d;
  const uint8_t* p = bytes.data() + sizeof(h);
  auto take = [&p](auto* vec, size_t n) {
    vec->resize(n);
    if (n == 0) return;  // an empty vector's data() may be null: no memcpy
    std::memcpy(vec->data(), p, n * sizeof((*vec)[0]));
    p += n * sizeof((*vec)[0]);
  };
  take(&d.rows, h.rows);
  take(&d.scopes, h.scopes);
  take(&d.segments, h.segments);
  std::vector<uint32_t> offsets;
  take(&offsets, size_t(h.strings) + 1);
  if (offsets[0] != 0 || offsets.back() != h.string_bytes)
    return Status::Error("bad string offsets");
  for (uint32_t i = 0; i < h.strings; ++i) {
    if (offsets[i + 1] < offsets[i]) return Status::Error("bad string offsets");
  }
  d.strings.reserve(h.strings);
  for (uint32_t i = 0; i < h.strings; ++i) {
    d.strings.emplace_back(reinterpret_cast<const char*>(p) + offsets[i],
                           offsets[i + 1] - offsets[i]);
  }
  // Every reference in range, sorted where searched, parents before children.
  auto name_ok = [&](uint32_t id) { return id == kNoName || id < h.strings; };
  for (size_t i = 0; i < d.rows.size(); ++i) {
    if (!name_ok(d.rows[i].file) || (i > 0 && d.rows[i].address < d.rows[i - 1].address)) {
      return Status::Error("bad line row " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < d.scopes.size(); ++i) {
    const auto& s = d.scopes[i];
    if ((s.parent != kNoName && s.parent >= i) || !name_ok(s.name) || !name_ok(s.call_file)) {
      return Status::Error("bad scope " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < d.segments.size(); ++i) {
    const auto& s = d.segments[i];
    if ((s.scope != kNoName && s.scope >= h.scopes) ||
        (i > 0 && s.start < d.segments[i - 1].start)) {
      return Status::Error("bad segment " + std::to_string(i));
    }
  }
  return d;
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

// libdwarf 20210528 is not safe on hostile input (a damaged
// .debug_rnglists header makes it free a block twice and abort), and debug
// files are untrusted. So the plugin reads in a forked child, which sends
// the table back serialized ('K' + the cache format) or an error ('E', one
// byte of StatusCode, then the message); the parent validates it like a
// cache entry. A crash costs the module its lines, never the process.
Result<LineTableData> ReadInChild(const std::string& path) {
  const Plugin& plugin = LoadPlugin();
  if (plugin.read == nullptr) return Status::Error(StatusCode::kUnavailable, plugin.error);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::Error(std::string("pipe: ") + strerror(errno));
  ScopedFd read_end(fds[0]);
  ScopedFd write_end(fds[1]);
  const pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) return Status::Error(std::string("fork: ") + strerror(errno));
  if (child == 0) {
    read_end.Reset();
    // A reader looping on damaged DWARF must not outlive a killed
    // recorder (it would run on alone, an orphan nobody waits for).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(4);
    // A crash here must end the child plainly, whatever handlers the
    // parent installed.
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
    LineTableData data;
    std::vector<uint8_t> out;
    Status read = plugin.read(path.c_str(), &data);
    if (read.ok()) {
      out = SerializeLineTable(data, 0, 0);
      out.insert(out.begin(), 'K');
    } else {
      out.assign(read.message().begin(), read.message().end());
      out.insert(out.begin(), {uint8_t('E'), uint8_t(read.code())});
    }
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = write(write_end.get(), out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(3);
      done += size_t(n);
    }
    _exit(0);
  }
  write_end.Reset();
  // Damaged DWARF can also make a reader loop: it gets a deadline.
  constexpr int kDeadlineSeconds = 120;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kDeadlineSeconds);
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{read_end.get(), POLLIN, 0};
    int ready = poll(&pfd, 1, int(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    ssize_t n = read(read_end.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.insert(bytes.end(), buf, buf + n);
  }
  read_end.Reset();
  if (timed_out) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::Error(StatusCode::kDataLoss,
                         "the DWARF reader took over " + std::to_string(kDeadlineSeconds) +
                             " s on this file and was stopped: damaged DWARF");
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
