// Test tool: reads code objects out of a running CPython process.
//   python_code PID INTERPRETER_ELF ADDRESS...
// Prints "threads TID..." (the native ids of its Python threads), then
// "names" and, tab-separated, "TID=NAME" for each thread threading names
// ("names absent" where the release has no offsets for them: 3.12), then for
// each address "QUALNAME|FILENAME|FIRST_LINE|LINE_TABLE_BYTES", or
// "error: WHY". The interpreter's load bias comes from /proc/PID/maps.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "src/runtimes/python/code_reader.h"
#include "src/runtimes/python/thread_names.h"
#include "src/symbols/elf_image.h"

using namespace microscope::runtimes::python;

namespace {

// The start of the mapping of `path` at file offset 0.
uint64_t MappedAt(pid_t pid, const std::string& path) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, file;
    in >> range >> perms >> offset >> dev >> inode >> file;
    if (file == path && std::stoull(offset, nullptr, 16) == 0)
      return std::stoull(range.substr(0, range.find('-')), nullptr, 16);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: python_code PID INTERPRETER_ELF ADDRESS...\n");
    return 2;
  }
  pid_t pid = pid_t(atoi(argv[1]));
  std::string path = argv[2];
  auto layout = LayoutFromElfFile(path);
  auto image = microscope::symbols::LoadElfImage(path);
  uint64_t start = MappedAt(pid, path);
  if (!layout.ok() || !image.ok() || start == 0 || (*image)->loads.empty()) {
    fprintf(stderr, "cannot read %s in pid %d\n", path.c_str(), pid);
    return 1;
  }
  uint64_t bias = start - ((*image)->loads[0].vaddr & ~uint64_t(0xfff));
  auto types = InterpreterAddressesFromElf(path, bias);
  if (!types.ok()) {
    fprintf(stderr, "%s\n", types.status().message().c_str());
    return 1;
  }
  ProcessMemory memory(pid);
  auto threads = ListThreads(memory, *layout, *types);
  if (threads.ok()) {
    printf("threads");
    for (const PythonThread& t : *threads)
      printf(" %llu", static_cast<unsigned long long>(t.native_id));
    printf("\n");
  } else {
    printf("threads error: %s\n", threads.status().message().c_str());
  }
  ThreadNamesCache cache;
  auto names = ReadThreadNames(memory, *layout, *types, &cache);
  if (!ThreadNamesReadable(*layout, *types)) {
    printf("names absent\n");
  } else if (!names.ok()) {
    printf("names error: %s\n", names.status().message().c_str());
  } else {
    printf("names");
    for (const PythonThread& t : threads.ok() ? *threads : std::vector<PythonThread>{}) {
      if (auto n = names->find(t.ident); n != names->end())
        printf("\t%llu=%s", static_cast<unsigned long long>(t.native_id), n->second.c_str());
    }
    printf("\n");
  }
  for (int i = 3; i < argc; ++i) {
    auto code = ReadCode(memory, *layout, *types, std::strtoull(argv[i], nullptr, 0));
    if (code.ok()) {
      printf("%s|%s|%d|%zu\n", code->qualname.c_str(), code->filename.c_str(), code->first_line,
             code->line_table_bytes);
    } else {
      printf("error: %s\n", code.status().message().c_str());
    }
  }
  return 0;
}
