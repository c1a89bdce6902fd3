#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "src/cli/commands.h"
#include "src/record/snapshot_server.h"

namespace microscope::cli {
namespace {

struct SnapshotOptions {
  int pid = 0;
  std::string output;
  int timeout_s = 120;
};

int RunSnapshot(const SnapshotOptions& o) {
  std::string path;
  if (!o.output.empty()) {
    // The recorder may run elsewhere in the file system: it gets an absolute path.
    std::error_code ec;
    path = std::filesystem::absolute(o.output, ec).lexically_normal().string();
    if (ec) {
      PrintError(o.output + ": " + ec.message());
      return 1;
    }
  }
  Result<std::string> answer = record::RequestSnapshot(o.pid, path, o.timeout_s * 1000);
  if (!answer.ok()) {
    PrintError(answer.status().message());
    return 1;
  }
  fprintf(stderr, "microscope: wrote %s\n", answer->c_str());
  return 0;
}

}  // namespace

Runner AddSnapshotCommand(CLI::App& app) {
  auto o = std::make_shared<SnapshotOptions>();
  CLI::App* cmd = app.add_subcommand(
      "snapshot",
      "Write what a running recording holds now to a capture, without stopping it.\n"
      "  microscope snapshot PID [-o FILE]\n"
      "PID is the recorder's or the recorded program's. A --rolling recording writes its\n"
      "window, a --continuous one its current segment so far, any other all it has so\n"
      "far. Without -o the recorder names the file after its own -o with a number\n"
      "(microscope.1.mscap, ...), as SIGUSR1 to the recorder does. Only root and the\n"
      "recorder's user may ask.");
  cmd->add_option("pid", o->pid, "the recorder's pid or its target's")
      ->required()
      ->check(PidCheck());
  cmd->add_option("-o,--output", o->output, "capture file to write");
  cmd->add_option("--timeout", o->timeout_s, "seconds to wait for the file to be written")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  return [o] { return RunSnapshot(*o); };
}

}  // namespace microscope::cli
