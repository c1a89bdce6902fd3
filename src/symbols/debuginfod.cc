#include "src/symbols/debuginfod.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "base/scoped_fd.h"

namespace microscope::symbols {
namespace {

// libdebuginfod's entry points, or why it could not be opened.
struct Library {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  std::string error;
};

const Library& OpenLibrary() {
  static const Library lib = [] {
    Library d;
    void* h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      d.error = std::string("libdebuginfod not available: ") + dlerror();
      return d;
    }
    d.begin = reinterpret_cast<decltype(d.begin)>(dlsym(h, "debuginfod_begin"));
    d.find_debuginfo =
        reinterpret_cast<decltype(d.find_debuginfo)>(dlsym(h, "debuginfod_find_debuginfo"));
    d.end = reinterpret_cast<decltype(d.end)>(dlsym(h, "debuginfod_end"));
    if (d.begin == nullptr || d.find_debuginfo == nullptr || d.end == nullptr) {
      d.begin = nullptr;
      d.error = "libdebuginfod.so.1 lacks debuginfod_begin/find_debuginfo/end";
    }
    return d;
  }();
  return lib;
}

// The owner of the cache path libdebuginfod strdups for each file found.
struct FreeDeleter {
  void operator()(char* p) const { free(p); }
};

}  // namespace

void DebuginfodClient::ClientDeleter::operator()(debuginfod_client* client) const {
  OpenLibrary().end(client);
}

Result<std::string> DebuginfodClient::FindDebuginfo(const std::vector<uint8_t>& build_id) {
  const char* env = getenv(DEBUGINFOD_URLS_ENV_VAR);
  if (env == nullptr || urls_ != env) {
    return Status::Error("not asked: $" DEBUGINFOD_URLS_ENV_VAR " is " +
                         (env == nullptr ? std::string("unset") : "'" + std::string(env) + "'") +
                         ", not these servers");
  }
  const Library& lib = OpenLibrary();
  if (lib.begin == nullptr) return Status::Error(lib.error);
  if (client_ == nullptr) {
    client_.reset(lib.begin());
    if (client_ == nullptr) return Status::Error("client could not start");
  }
  char* raw_path = nullptr;
  int found = lib.find_debuginfo(client_.get(), build_id.data(), int(build_id.size()), &raw_path);
  std::unique_ptr<char, FreeDeleter> path(raw_path);
  if (found < 0) return Status::Error(strerror(-found));
  ScopedFd fd(found);  // the file is read again by path, as every candidate is
  return std::string(path != nullptr ? path.get() : "");
}

}  // namespace microscope::symbols
