// Each command registers its CLI11 subcommand and returns the function that
// runs it (returning the process exit status). Commands are thin adapters.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

namespace microscope::cli {

using Runner = std::function<int()>;

Runner AddRecordCommand(CLI::App& app);
Runner AddReportCommand(CLI::App& app);
Runner AddConvertCommand(CLI::App& app);
Runner AddSymbolizeCommand(CLI::App& app);

// Prints "microscope: error: MESSAGE" to stderr.
void PrintError(const std::string& message);

}  // namespace microscope::cli
