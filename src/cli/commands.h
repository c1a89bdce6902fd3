// Each command registers its CLI11 subcommand and returns the function that
// runs it (returning the process exit status). Commands are thin adapters.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

namespace microscope::formats {
struct SourceOptions;
}

namespace microscope::cli {

using Runner = std::function<int()>;

Runner AddRecordCommand(CLI::App& app);
Runner AddReportCommand(CLI::App& app);
Runner AddConvertCommand(CLI::App& app);
Runner AddSymbolizeCommand(CLI::App& app);

Runner AddSyscallsCommand(CLI::App& app);
Runner AddServeCommand(CLI::App& app);
Runner AddSnapshotCommand(CLI::App& app);
Runner AddQueryCommand(CLI::App& app);
Runner AddDoctorCommand(CLI::App& app);
Runner AddTriageCommand(CLI::App& app);
Runner AddImportCommand(CLI::App& app);

// A positive duration (base/duration.h) given to `option`, into
// nanoseconds; otherwise prints the error and returns false.
bool ParseDurationOption(const char* option, const std::string& text, uint64_t* ns);
// A positive size (base/duration.h's ParseByteSize) given to `option`, in
// bytes; otherwise prints the error and returns false.
bool ParseSizeOption(const char* option, const std::string& text, uint64_t* bytes);
// --syscall-stack-min TIME (record and syscalls), read into `text`.
void AddSyscallStackMinOption(CLI::App* cmd, std::string* text);

// --inlines on|off (report and convert), read into `text`.
void AddInlinesOption(CLI::App* cmd, std::string* text);
// --look mixed|python|native (report and convert), read into `text`.
void AddLookOption(CLI::App* cmd, std::string* text, bool* native_leaves);
// --source-root DIR and --trim-path PREFIX (report and serve): where the
// source view looks for the files a capture names.
void AddSourceRootOptions(CLI::App* cmd, formats::SourceOptions* options);
// A process id: a whole number from 1 to 4194304 (the kernel's largest
// pid_max); anything else is one line naming what was given.
CLI::Validator PidCheck();

// Prints "microscope: error: MESSAGE" to stderr.
void PrintError(const std::string& message);

}  // namespace microscope::cli
