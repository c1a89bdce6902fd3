#include "src/runtimes/python/module_info.h"

#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string_view>

#include "src/record/proc.h"
#include "src/symbols/elf_handle.h"

namespace microscope::runtimes::python {

std::unique_ptr<ModuleInfo> ReadModuleInfo(const std::string& path) {
  auto info = std::make_unique<ModuleInfo>();
  Result<Layout> layout = LayoutFromElfFile(path);
  if (!layout.ok()) {
    if (layout.status().code() != StatusCode::kNotFound) {
      info->python = true;
      info->error = layout.status().message();
    }
    return info;
  }
  info->python = true;
  info->layout = *layout;
  Result<InterpreterAddresses> at = InterpreterAddressesFromElf(path, 0);
  Result<symbols::ElfFile> file = symbols::OpenElfFile(path);
  Result<std::vector<symbols::LoadSegment>> loads =
      file.ok() ? symbols::ElfLoadSegments(file->elf.get())
                : Result<std::vector<symbols::LoadSegment>>(file.status());
  GElf_Sym eval;
  if (!at.ok()) {
    info->error = at.status().message();
  } else if (!loads.ok()) {
    info->error = loads.status().message();
  } else if (!symbols::FindSymbol(file->elf.get(), "_PyEval_EvalFrameDefault", &eval)) {
    info->error = path + ": no _PyEval_EvalFrameDefault symbol";
  } else {
    info->at = *at;
    info->loads = *loads;
    if (Result<std::unique_ptr<symbols::ElfImage>> image = symbols::LoadElfImage(path); image.ok())
      info->image = std::move(*image);
    for (const symbols::LoadSegment& s : info->loads) {
      if (eval.st_value >= s.vaddr && eval.st_value < s.vaddr + s.filesz) {
        info->eval_begin = eval.st_value - s.vaddr + s.offset;
        info->eval_end = info->eval_begin + std::max<uint64_t>(eval.st_size, 1);
      }
    }
  }
  return info;
}

std::optional<std::pair<uint64_t, uint64_t>> PidNamespace(const std::string& pid) {
  struct stat st;
  if (stat(("/proc/" + pid + "/ns/pid").c_str(), &st) != 0) return std::nullopt;
  return std::pair{uint64_t(st.st_dev), uint64_t(st.st_ino)};
}

std::unordered_map<uint64_t, uint32_t> NamespaceTids(uint32_t pid) {
  std::unordered_map<uint64_t, uint32_t> out;
  std::error_code ec;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream status(entry.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("NSpid:", 0) != 0) continue;
      std::istringstream in(line.substr(6));
      uint64_t first = 0, last = 0, v;
      if (in >> first) {
        last = first;
        while (in >> v) last = v;
        out[last] = uint32_t(first);
      }
    }
  }
  return out;
}

bool LooksLikePython(bool launch, uint32_t target, const std::string& path) {
  if (!launch) {
    const auto mappings = record::ExecutableMappings(pid_t(target));
    return std::any_of(mappings.begin(), mappings.end(), [](const record::ExecutableMapping& m) {
      return m.path.find("python") != std::string::npos;
    });
  }
  if (path.empty()) return false;
  std::ifstream in(path, std::ios::binary);
  std::string head(1 << 18, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  // A script run by Python, an interpreter that links libpython, or one
  // with the interpreter in it.
  if (head.rfind("#!", 0) == 0)
    return head.substr(0, head.find('\n')).find("python") != std::string::npos;
  return head.find("libpython3") != std::string::npos ||
         LayoutFromElfFile(path).status().code() != StatusCode::kNotFound;
}

bool LooksLikeLauncher(const std::string& path) {
  if (path.empty()) return false;
  std::ifstream in(path, std::ios::binary);
  char head[2] = {};
  in.read(head, sizeof(head));
  if (in.gcount() == 2 && head[0] == '#' && head[1] == '!') return true;  // any script
  static constexpr std::string_view kLaunchers[] = {
      "sh",   "bash",  "dash",   "zsh",     "ksh",     "mksh", "busybox", "env",
      "nice", "nohup", "setsid", "timeout", "taskset", "chrt", "stdbuf",  "xargs"};
  const std::string base = std::filesystem::path(path).filename().string();
  return std::find(std::begin(kLaunchers), std::end(kLaunchers), base) != std::end(kLaunchers);
}

}  // namespace microscope::runtimes::python
