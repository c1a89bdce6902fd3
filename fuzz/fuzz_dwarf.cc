// The DWARF line reader as it runs: the helper program (libdwarf) reads the
// file and sends the table back; the parent checks the reply like
// any untrusted bytes. A crash or hang of libdwarf on a damaged file costs
// that file its lines (the helper's exit status says why); this target fails
// only when the parent side does not hold: a crash, a leak, undefined
// behaviour, or a reader that never returns. (The helper's coverage does not
// reach the fuzzer: it guides on the parent's checks and mutates the rest.)
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "src/symbols/line_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope;
  int fd = memfd_create("fuzz_dwarf", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  auto table = symbols::OpenLineTable("/proc/self/fd/" + std::to_string(fd));
  if (table.ok()) {
    std::vector<symbols::SourceFrame> frames;
    for (uint64_t vaddr : {0x0ull, 0x1000ull, 0x1130ull, 0x401000ull})
      (*table)->Lookup(vaddr, &frames);
  }
  close(fd);
  return 0;
}
