// Loads libmicroscope_dwarf.so (see line_table.h) once per process.
#include "src/symbols/line_table.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

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
  OpenLineTableFn open = nullptr;
  std::string error;
};

const Plugin& LoadPlugin() {
  static Plugin plugin;
  static std::once_flag once;
  std::call_once(once, [] {
    // $MICROSCOPE_DWARF_PLUGIN (tests and benchmarks built elsewhere), else
    // beside the executable, else the installed library directory.
    std::vector<std::string> candidates;
    if (const char* env = getenv("MICROSCOPE_DWARF_PLUGIN"); env != nullptr && *env != '\0') {
      candidates.push_back(env);
    } else {
      std::string dir = OwnDirectory();
      candidates.push_back(dir + "/" + kPluginName);
      candidates.push_back(dir + "/../lib/microscope/" + kPluginName);
    }
    for (const std::string& path : candidates) {
      if (access(path.c_str(), R_OK) != 0) continue;
      // DEEPBIND: the plugin and libdwarf resolve libdwarf's names to
      // libdwarf, not to libdw's functions of the same names.
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (handle == nullptr) {
        plugin.error = std::string("cannot load ") + path + ": " + dlerror();
        return;
      }
      plugin.open = reinterpret_cast<OpenLineTableFn>(dlsym(handle, kOpenLineTableSymbol));
      if (plugin.open == nullptr) plugin.error = path + " has no " + kOpenLineTableSymbol;
      return;
    }
    plugin.error = std::string("DWARF reader ") + kPluginName + " not found (looked in " +
                   candidates.front() + (candidates.size() > 1 ? " and " + candidates[1] : "") +
                   ")";
  });
  return plugin;
}

}  // namespace

Result<std::unique_ptr<LineTable>> OpenLineTable(const std::string& path) {
  const Plugin& plugin = LoadPlugin();
  if (plugin.open == nullptr) return Status::Error(plugin.error);
  std::string error;
  LineTable* table = plugin.open(path.c_str(), &error);
  if (table == nullptr) return Status::Error(error);
  return std::unique_ptr<LineTable>(table);
}

}  // namespace microscope::symbols
