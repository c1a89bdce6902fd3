#include <bpf/libbpf.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <sstream>
#include <vector>

#include "formats/source_text.h"
#include "src/cli/commands.h"

namespace microscope::cli {

void AddInlinesOption(CLI::App* cmd, std::string* text) {
  cmd->add_option("--inlines", *text,
                  "on: functions inlined into others are frames of their own, with their "
                  "time (as pprof shows them); off: their time goes to the function that "
                  "holds their code (as perf report credits it)")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
}

void AddLookOption(CLI::App* cmd, std::string* text, bool* native_leaves) {
  cmd->add_option("--look", *text,
                  "mixed: Python and JavaScript frames among the native and kernel frames "
                  "that run them; python or js (one look for both runtimes): from the "
                  "outermost interpreted frame in, without the runtime's own frames (native "
                  "code called from Python or JavaScript stays, but the C library's and the "
                  "kernel's frames at the leaf go, as py-spy shows them); native: no "
                  "interpreted frames")
      ->capture_default_str()
      ->check(CLI::IsMember({"mixed", "python", "js", "native"}));
  cmd->add_flag("--native-leaves", *native_leaves,
                "with --look python or js, keep the C and C++ runtime libraries', the vDSO's "
                "and the kernel's frames at the leaf");
}

void AddSourceRootOptions(CLI::App* cmd, formats::SourceOptions* options) {
  cmd->add_option("--source-root", options->root,
                  "look for the source view's files under DIR first (as pprof's -source_path): "
                  "a capture's path, less --trim-path, below DIR; read with this process's "
                  "rights, never through a link of another user or out of DIR")
      ->type_name("DIR");
  cmd->add_option("--trim-path", options->trim,
                  "strip PREFIX from the capture's source paths before looking under "
                  "--source-root (as pprof's -trim_path): for a tree moved, or recorded on "
                  "another host")
      ->type_name("PREFIX");
}

CLI::Validator PidCheck() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int pid = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
        if (ec == std::errc() && end == text.data() + text.size() && pid >= 1 && pid <= 4194304)
          return "";
        return "'" + text + "' is not a process id (a whole number from 1 to 4194304)";
      },
      "PID");
}

// `microscope --help` lists each command by the first sentence of its
// description; `microscope COMMAND --help` gives the whole of it (convert's
// table of what each format keeps, record's modes, ...).
class CommandListFormatter : public CLI::Formatter {
 public:
  std::string make_subcommand(const CLI::App* sub) const override {
    const std::string& text = sub->get_description();
    size_t end = text.find('.');
    while (end != std::string::npos && end + 1 < text.size() && text[end + 1] != ' ' &&
           text[end + 1] != '\n')
      end = text.find('.', end + 1);
    std::string first = text.substr(0, end == std::string::npos ? end : end + 1);
    std::replace(first.begin(), first.end(), '\n', ' ');
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), first, column_width_);
    return out.str();
  }
};

void PrintError(const std::string& message) {
  fprintf(stderr, "microscope: error: %s\n", message.c_str());
}

}  // namespace microscope::cli

int main(int argc, char** argv) {
  using namespace microscope::cli;
  // libbpf logs to stderr by default; its errors come back to us as
  // statuses, told once with what they mean. Set here, once, before any
  // command opens a BPF object (the libraries leave process-wide state alone).
  libbpf_set_print(nullptr);
  CLI::App app{"microscope: a sampling profiler for Linux"};
  app.set_version_flag("--version", "microscope " MICROSCOPE_VERSION);
  app.formatter(std::make_shared<CommandListFormatter>());
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, Runner>> commands;
  Runner record = AddRecordCommand(app);
  Runner report = AddReportCommand(app);
  Runner convert = AddConvertCommand(app);
  Runner symbolize = AddSymbolizeCommand(app);
  Runner syscalls = AddSyscallsCommand(app);
  Runner serve = AddServeCommand(app);
  Runner snapshot = AddSnapshotCommand(app);
  Runner query = AddQueryCommand(app);
  Runner doctor = AddDoctorCommand(app);
  Runner triage = AddTriageCommand(app);
  Runner import = AddImportCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.got_subcommand("record")) return record();
  if (app.got_subcommand("report")) return report();
  if (app.got_subcommand("convert")) return convert();
  if (app.got_subcommand("symbolize")) return symbolize();
  if (app.got_subcommand("syscalls")) return syscalls();
  if (app.got_subcommand("serve")) return serve();
  if (app.got_subcommand("snapshot")) return snapshot();
  if (app.got_subcommand("query")) return query();
  if (app.got_subcommand("doctor")) return doctor();
  if (app.got_subcommand("triage")) return triage();
  if (app.got_subcommand("import")) return import();
  return 2;
}
