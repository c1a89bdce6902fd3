// The sample filters report and convert share: --focus, --exclude,
// --thread, --pid, --time, --zone, --label, --gil. Registered on a command,
// resolved once parsed.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "analysis/filter.h"
#include "base/status.h"

namespace microscope::cli {

struct FilterOptions {
  analysis::FilterSpec spec;
  std::string time;
  std::string focus_path;  // main;run;hot
  int pid = 0;
  std::vector<std::string> labels;  // KEY=VALUE
  std::string gil;                  // held, released

  void Register(CLI::App* cmd);
  // Parses --time, --pid, --label and --gil into spec.
  Status Resolve();
  // "thread worker-a, focus /re/", for the report header; empty when none.
  std::string Describe() const;
};

}  // namespace microscope::cli
