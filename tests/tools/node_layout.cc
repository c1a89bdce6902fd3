// Prints the V8 layout read from an ELF file's v8dbg_ symbols
// (src/runtimes/node/layout), one "name value" per line, or "error: WHY".
#include <cstdio>

#include "src/runtimes/node/layout.h"

using microscope::runtimes::node::V8Layout;

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: node_layout NODE_BINARY\n");
    return 2;
  }
  auto l = microscope::runtimes::node::V8LayoutFromElfFile(argv[1]);
  if (!l.ok()) {
    printf("error: %s\n", l.status().message().c_str());
    return 1;
  }
  const std::pair<const char*, int64_t V8Layout::*> kRows[] = {
      {"fp_function", &V8Layout::fp_function},
      {"fp_context", &V8Layout::fp_context},
      {"fp_bytecode_array", &V8Layout::fp_bytecode_array},
      {"fp_bytecode_offset", &V8Layout::fp_bytecode_offset},
      {"heap_object_tag", &V8Layout::heap_object_tag},
      {"heap_object_tag_mask", &V8Layout::heap_object_tag_mask},
      {"smi_shift_size", &V8Layout::smi_shift_size},
      {"smi_tag_mask", &V8Layout::smi_tag_mask},
      {"heap_object_map", &V8Layout::heap_object_map},
      {"map_instance_type", &V8Layout::map_instance_type},
      {"function_shared", &V8Layout::function_shared},
      {"shared_name", &V8Layout::shared_name},
      {"shared_script", &V8Layout::shared_script},
      {"script_name", &V8Layout::script_name},
      {"script_line_ends", &V8Layout::script_line_ends},
      {"type_js_function", &V8Layout::type_js_function},
      {"type_shared_function_info", &V8Layout::type_shared_function_info},
      {"type_script", &V8Layout::type_script},
      {"symbols", &V8Layout::symbols},
  };
  for (const auto& [name, field] : kRows)
    printf("%s %lld\n", name, static_cast<long long>((*l).*field));
  return 0;
}
