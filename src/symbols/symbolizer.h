// Names a capture's frames: function names (ELF symbols, demangled, the raw
// name kept), source file:line, and inlined calls as frames of their own.
// Used at record time (`record --symbolize now`, the files of this host)
// and by `microscope symbolize` (on any host, from debug directories, a
// sysroot or debuginfod). Every file is proven by its build ID before use.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::symbols {

struct SymbolizeOptions {
  std::vector<std::string> debug_dirs;  // searched first, in order
  std::string sysroot;                  // "" is "/"
  // The debuginfod servers to ask (none: debuginfod is not asked).
  //
  // libdebuginfod (elfutils 0.188) takes its servers only from
  // $DEBUGINFOD_URLS, which it reads at each query; it has no call that
  // takes them. A library must not change process state (another thread may
  // be reading the environment: setenv is not thread-safe), so the
  // symbolizer never sets it. The caller sets $DEBUGINFOD_URLS to
  // DebuginfodUrlsValue(these) while the process has one thread
  // (src/cli/symbolize_command.cc), and the symbolizer asks only when the
  // environment holds exactly these servers; otherwise it says so.
  std::vector<std::string> debuginfod_urls;
  // The capture was recorded on this host a moment ago: the kernel is named
  // from /proc/kallsyms and the vDSO from our own image when their build IDs
  // match this host's (checked either way).
  bool this_host = false;
  // Per module (by id), its file as the recorded processes saw it, through
  // their own roots (/proc/self/fd/N/path): tried before the recorded path,
  // which a program in another mount namespace may not see. At record time
  // only; each is proved by build ID like any other file.
  std::vector<std::vector<std::string>> target_paths;
  // Decoded DWARF tables are kept here by build ID ("" : no cache).
  std::string cache_dir;
};

// $DEBUGINFOD_URLS's value for `urls`: separated by spaces, as libdebuginfod
// reads it.
std::string DebuginfodUrlsValue(const std::vector<std::string>& urls);

// Why a frame stayed unnamed.
inline constexpr const char* kNoFile = "no file found";
inline constexpr const char* kMismatch = "build ID mismatch";
inline constexpr const char* kNoSymbols = "no symbols";
inline constexpr const char* kOutsideSymbols = "address outside any symbol";
inline constexpr const char* kNoBuildId = "no build ID recorded";
inline constexpr const char* kAnonymous = "anonymous memory (no file)";
inline constexpr const char* kOtherBoot = "kernel recorded in another boot";

struct ModuleSummary {
  capture::ModuleId module = capture::kNone;
  std::string path;
  std::string build_id;                     // hex, empty when none was recorded
  std::vector<std::string> used;            // files whose symbols or DWARF were used
  std::vector<std::string> looked;          // every place looked, with what was there
  std::vector<std::string> problems;        // malformed files, unreadable DWARF
  uint64_t frames = 0;                      // distinct native/kernel frames of the module
  uint64_t named = 0;                       // of those, with a function name afterwards
  uint64_t with_lines = 0;                  // of those, with a source line
  uint64_t newly_named = 0;                 // named now and not before
  uint64_t inline_frames = 0;               // inlined-call frames added
  std::map<std::string, uint64_t> unnamed;  // reason -> frames
};

struct SymbolizeSummary {
  std::vector<ModuleSummary> modules;  // modules with frames, in module order
  uint64_t frames = 0;
  uint64_t named = 0;
  uint64_t changed = 0;  // frames that gained a name, a line or inlined calls
};

// Stores each file module's PT_LOAD segments in the capture (read from this
// host's files, checked by build ID; the vDSO from our own image), so that
// frames' file offsets can be turned into addresses on any host, even from
// debug files, whose segments have no file offsets. Record time only.
void AddModuleLayouts(capture::Capture* capture,
                      const std::vector<std::vector<std::string>>& target_paths = {});

// Names `capture`'s frames in place. A frame is changed only when it gains
// information (a name, a line, inlined calls), so a symbolized capture can
// be symbolized again with more debug files. Problems are also counted in
// the capture's problems. Fails only on a capture it cannot make sense of.
Result<SymbolizeSummary> Symbolize(capture::Capture* capture, const SymbolizeOptions& options);

}  // namespace microscope::symbols
