// What a runtime reads once per file (an interpreter's layout, a V8 image's),
// keyed by the file's identity (device and inode): the same image under two
// paths (a container's root, a link, /proc/PID/exe) is read once.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace microscope::runtimes {

template <typename T>
class PerFile {
 public:
  // The value for the file at `path`, made by `read(path)` (a
  // std::unique_ptr<T>) the first time, `on_read(value)` then called; a
  // default T when the file cannot be found.
  template <typename Read, typename OnRead>
  const T* Get(const std::string& path, Read read, OnRead on_read) {
    static const T kNone{};
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return &kNone;
    auto [it, fresh] = by_file_.try_emplace({uint64_t(st.st_dev), uint64_t(st.st_ino)});
    if (fresh) {
      it->second = read(path);
      on_read(*it->second);
    }
    return it->second.get();
  }

 private:
  std::map<std::pair<uint64_t, uint64_t>, std::unique_ptr<T>> by_file_;
};

}  // namespace microscope::runtimes
