#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/percent.h"
#include "capture/reader.h"
#include "capture/writer.h"
#include "src/cli/commands.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbolizer.h"

namespace microscope::cli {
namespace {

struct SymbolizeCommandOptions {
  std::string input;
  std::string output;
  bool json = false;
  bool quiet = false;
  bool no_cache = false;
  symbols::SymbolizeOptions how;
};

std::string PercentText(uint64_t part, uint64_t whole) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.1f%%", Percent(part, whole));
  return buf;
}

void PrintText(const symbols::SymbolizeSummary& s, const std::string& in, const std::string& out) {
  printf("%s -> %s: %llu of %llu frames named (%s), %llu changed\n", in.c_str(), out.c_str(),
         static_cast<unsigned long long>(s.named), static_cast<unsigned long long>(s.frames),
         PercentText(s.named, s.frames).c_str(), static_cast<unsigned long long>(s.changed));
  for (const symbols::ModuleSummary& m : s.modules) {
    printf("\n%s\n  build ID %s\n", m.path.c_str(),
           m.build_id.empty() ? "none" : m.build_id.c_str());
    printf(
        "  frames %llu: %llu named (%s), %llu with file:line, %llu newly named, %llu inlined-call "
        "frames added\n",
        static_cast<unsigned long long>(m.frames), static_cast<unsigned long long>(m.named),
        PercentText(m.named, m.frames).c_str(), static_cast<unsigned long long>(m.with_lines),
        static_cast<unsigned long long>(m.newly_named),
        static_cast<unsigned long long>(m.inline_frames));
    for (const auto& [why, n] : m.unnamed) {
      printf("  unnamed %llu: %s\n", static_cast<unsigned long long>(n), why.c_str());
    }
    for (const std::string& u : m.used) printf("  used   %s\n", u.c_str());
    for (const std::string& l : m.looked) printf("  looked %s\n", l.c_str());
    for (const std::string& p : m.problems) printf("  problem %s\n", p.c_str());
  }
}

void PrintJson(const symbols::SymbolizeSummary& s, const std::string& in, const std::string& out) {
  nlohmann::ordered_json j;
  j["input"] = in;
  j["output"] = out;
  j["frames"] = s.frames;
  j["named"] = s.named;
  j["changed"] = s.changed;
  j["modules"] = nlohmann::ordered_json::array();
  for (const symbols::ModuleSummary& m : s.modules) {
    nlohmann::ordered_json mj;
    mj["path"] = m.path;
    mj["build_id"] = m.build_id;
    mj["frames"] = m.frames;
    mj["named"] = m.named;
    mj["with_lines"] = m.with_lines;
    mj["newly_named"] = m.newly_named;
    mj["inline_frames"] = m.inline_frames;
    mj["unnamed"] = m.unnamed;
    mj["used"] = m.used;
    mj["looked"] = m.looked;
    mj["problems"] = m.problems;
    j["modules"].push_back(std::move(mj));
  }
  printf("%s\n", j.dump(2).c_str());
}

// libdebuginfod (elfutils 0.188) takes its servers only from
// $DEBUGINFOD_URLS, read at each query; it has no call that takes them. So
// --debuginfod must reach it through the environment, and this is the one
// place that changes it: the command, on the main thread, before anything
// that could start a thread (reading the capture, symbolizing), so no
// concurrent getenv can race with setenv. The symbolizer is given the same
// servers and never sets the environment itself (symbolizer.h).
void SetDebuginfodServers(std::vector<std::string>* urls) {
  if (!urls->empty()) {
    setenv("DEBUGINFOD_URLS", symbols::DebuginfodUrlsValue(*urls).c_str(), 1);
  } else if (const char* env = getenv("DEBUGINFOD_URLS"); env != nullptr && *env != '\0') {
    urls->push_back(env);
  }
}

int RunSymbolize(SymbolizeCommandOptions& o) {
  SetDebuginfodServers(&o.how.debuginfod_urls);
  if (o.output.empty()) o.output = o.input;  // in place, through a temporary + rename
  auto cap = capture::ReadCapture(o.input);
  if (!cap.ok()) {
    PrintError(cap.status().WithContext(o.input).message());
    return 1;
  }
  if (!o.no_cache) o.how.cache_dir = symbols::DefaultCacheDir();
  auto summary = symbols::Symbolize(&*cap, o.how);
  if (!summary.ok()) {
    PrintError(summary.status().WithContext(o.input).message());
    return 1;
  }
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  cap->settings.symbols = "symbolize";
  cap->settings.notes.push_back("symbolized on " + std::string(host) + ": " +
                                std::to_string(summary->named) + " of " +
                                std::to_string(summary->frames) + " frames named");
  Status valid = capture::ValidateCapture(*cap);
  if (!valid.ok()) {
    PrintError(
        valid.WithContext("internal error: the symbolized capture is inconsistent").message());
    return 1;
  }
  Status written = capture::WriteCapture(*cap, o.output);
  if (!written.ok()) {
    PrintError(written.WithContext(o.output).message());
    return 1;
  }
  if (o.json) {
    PrintJson(*summary, o.input, o.output);
  } else if (!o.quiet) {
    PrintText(*summary, o.input, o.output);
  }
  return 0;
}

}  // namespace

Runner AddSymbolizeCommand(CLI::App& app) {
  auto o = std::make_shared<SymbolizeCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "symbolize",
      "Name a capture's frames (functions, file:line, inlined calls) from debug files,\n"
      "on this host or any other. Each module's file is found by build ID, in order:\n"
      "  each --debug-dir (DIR/.build-id/xx/rest.debug, perf's DIR/.build-id/xx/rest/{debug,elf},\n"
      "  then any file under DIR whose own build ID matches), SYSROOT/usr/lib/debug/.build-id,\n"
      "  the module's recorded path under SYSROOT (or /), then debuginfod (--debuginfod or\n"
      "  $DEBUGINFOD_URLS). A file whose build ID differs is refused and reported.\n"
      "Frames are changed only where they gain a name, a line or inlined calls, so a\n"
      "capture can be symbolized again with more files. Prints what was found per module.\n"
      "  microscope symbolize run.mscap --debug-dir ./dbg --sysroot ./root");
  cmd->add_option("input", o->input, "capture to symbolize")->required();
  cmd->add_option("-o,--output", o->output, "write here instead of replacing the input");
  cmd->add_option("--debug-dir", o->how.debug_dirs, "directory of debug files (repeatable)");
  cmd->add_option("--sysroot", o->how.sysroot, "root of the recording host's files");
  cmd->add_option("--debuginfod", o->how.debuginfod_urls,
                  "debuginfod server URL (repeatable; default $DEBUGINFOD_URLS)");
  cmd->add_flag("--no-cache", o->no_cache,
                "read every DWARF file afresh: neither use nor fill the cache of decoded tables "
                "($MICROSCOPE_CACHE_DIR, else ~/.cache/microscope; keyed by build ID, size and "
                "mtime)");
  cmd->add_flag("--json", o->json, "the per-module summary as JSON");
  cmd->add_flag("-q,--quiet", o->quiet, "no summary");
  return [o]() { return RunSymbolize(*o); };
}

}  // namespace microscope::cli
