#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "src/doctor/doctor.h"

namespace microscope::cli {
namespace {

struct DoctorOptions {
  int pid = 0;
  std::vector<std::string> command;
  bool json = false;
  bool human = false;
};

int RunDoctor(const DoctorOptions& o) {
  doctor::Target target{o.pid, o.command};
  std::vector<doctor::Check> checks = doctor::SystemChecks();
  for (doctor::Check& c : doctor::TargetChecks(target)) checks.push_back(std::move(c));
  size_t count[3] = {};
  for (const doctor::Check& c : checks) ++count[size_t(c.verdict)];
  const bool json = o.json || (!o.human && isatty(STDOUT_FILENO) == 0);
  if (json) {
    nlohmann::ordered_json j;
    j["schema"] = "microscope.doctor/1";
    if (o.pid != 0) j["target"] = {{"pid", o.pid}};
    if (!o.command.empty()) j["target"] = {{"command", o.command}};
    j["summary"] = {{"pass", count[0]}, {"warn", count[1]}, {"fail", count[2]}};
    j["checks"] = nlohmann::ordered_json::array();
    for (const doctor::Check& c : checks) {
      nlohmann::ordered_json row = {
          {"check", c.name}, {"verdict", doctor::VerdictName(c.verdict)}, {"found", c.found}};
      if (!c.fix.empty()) row["fix"] = c.fix;
      j["checks"].push_back(std::move(row));
    }
    printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    for (const doctor::Check& c : checks) {
      printf("%-4s  %s: %s\n", doctor::VerdictName(c.verdict), c.name.c_str(), c.found.c_str());
      if (!c.fix.empty()) printf("      fix: %s\n", c.fix.c_str());
    }
    printf("%zu passed, %zu warned, %zu failed\n", count[0], count[1], count[2]);
  }
  return count[2] > 0 ? 1 : 0;
}

}  // namespace

Runner AddDoctorCommand(CLI::App& app) {
  auto o = std::make_shared<DoctorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Check before recording that it will work, and what to fix first.\n"
      "  microscope doctor                  this machine and user\n"
      "  microscope doctor --pid PID        ... and a running process\n"
      "  microscope doctor -- PROG ARGS     ... and a program (not run: its files are read)\n"
      "Each check passes, warns or fails, with what it found and the next step: privileges,\n"
      "perf_event_paranoid, kptr_restrict, locked memory for the rings, BTF, tracepoints, the\n"
      "CPU; the target's modules (CFI, symbols, debug info, debuginfod), the CPython and Node\n"
      "releases in it and whether their frames are walked, a container. JSON when stdout is\n"
      "not a terminal. Exit status 1 when a check fails.");
  cmd->add_option("--pid", o->pid, "a running process to check")->check(PidCheck());
  cmd->add_option("command", o->command, "the program to check, after --");
  cmd->add_flag("--json", o->json, "JSON even on a terminal");
  cmd->add_flag("--human", o->human, "text even when stdout is not a terminal");
  cmd->positionals_at_end();
  return [o] {
    if (o->pid != 0 && !o->command.empty()) {
      PrintError("doctor: --pid or a program, not both");
      return 2;
    }
    return RunDoctor(*o);
  };
}

}  // namespace microscope::cli
