// Test tool: reads a valid capture, breaks one cross-reference, and writes it
// back as a well-formed container, so the reader's own checks (not zstd's
// or FlatBuffers') must catch it. Usage: capture_corrupt IN OUT MODE
#include <cstdio>
#include <string>

#include "capture/container.h"
#include "capture/reader.h"
#include "capture/writer.h"

using namespace microscope::capture;

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr,
            "usage: capture_corrupt IN OUT stack-cycle|stack-range|thread-range|string-range\n");
    return 2;
  }
  auto c = ReadCapture(argv[1]);
  if (!c.ok()) {
    fprintf(stderr, "%s\n", c.status().message().c_str());
    return 1;
  }
  std::string mode = argv[3];
  if (c->stacks.size() < 2 || c->samples.size() == 0) return 1;
  if (mode == "stack-cycle") {
    // Node 0 claims the last node as its parent: walking up never ends.
    c->stacks.parent[0] = uint32_t(c->stacks.size() - 1);
  } else if (mode == "stack-range") {
    c->samples.stack[c->samples.size() / 2] = uint32_t(c->stacks.size() + 5);
  } else if (mode == "thread-range") {
    c->samples.thread[0] = uint32_t(c->threads.size());
  } else if (mode == "string-range") {
    c->functions[0].name = uint32_t(c->strings.size() + 100);
  } else {
    return 2;
  }
  auto status = WriteContainer(argv[2], SerializeCapture(*c));
  return status.ok() ? 0 : 1;
}
