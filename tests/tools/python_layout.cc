// Test tool: prints the CPython layout read from an interpreter's ELF file,
// one "name value" line per offset (decimal), or the refusal on stderr.
// Offsets a release does not have are left out; 3.11 reaches the current
// frame through the thread's _PyCFrame (thread_cframe, cframe_current_frame).
#include <cstdio>
#include <utility>

#include "src/runtimes/python/layout.h"

using namespace microscope::runtimes::python;

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: python_layout ELF\n");
    return 2;
  }
  auto l = LayoutFromElfFile(argv[1]);
  if (!l.ok()) {
    fprintf(stderr, "%s\n", l.status().message().c_str());
    return 1;
  }
  printf("version %s\n", l->Version().c_str());
  const std::pair<const char*, uint64_t> rows[] = {
      {"interp_threads_head", l->interp_threads_head},
      {"thread_native_id", l->thread_native_id},
      {"thread_current_frame", l->thread_current_frame},
      {"thread_cframe", l->thread_cframe},
      {"cframe_current_frame", l->cframe_current_frame},
      {"frame_executable", l->frame_executable},
      {"frame_previous", l->frame_previous},
      {"code_qualname", l->code_qualname},
      {"code_firstlineno", l->code_firstlineno},
  };
  for (auto& [name, value] : rows) {
    if (value != Layout::kAbsent) printf("%s %llu\n", name, static_cast<unsigned long long>(value));
  }
  return 0;
}
