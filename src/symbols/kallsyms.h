// Kernel function symbols from /proc/kallsyms and the kernel's build ID
// from /sys/kernel/notes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "src/symbols/symbol_table.h"

namespace microscope::symbols {

// Parses kallsyms text ("ADDR TYPE NAME [MODULE]" lines). Addresses of zero
// (hidden by kptr_restrict) make it an error: the table would name nothing.
Result<SymbolTable> ParseKallsyms(std::string_view text);
Result<SymbolTable> LoadKallsyms(const std::string& path = "/proc/kallsyms");

// This boot's ID (/proc/sys/kernel/random/boot_id), or empty. Kernel
// addresses, moved by KASLR at each boot, hold only within one boot.
std::string BootId();

// The running kernel's GNU build ID, or empty if unreadable.
std::vector<uint8_t> KernelBuildId();

}  // namespace microscope::symbols
