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
  for (const auto& [symbol, field] : microscope::runtimes::node::V8Fields())
    printf("%s %lld\n", symbol, static_cast<long long>((*l).*field));
  printf("symbols %lld\n", static_cast<long long>(l->symbols));
  return 0;
}
