// /proc/kallsyms text (and a file given as --kallsyms on another host).
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/symbols/kallsyms.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t =
      microscope::symbols::ParseKallsyms(std::string(reinterpret_cast<const char*>(data), size));
  if (t.ok()) (void)t->Find(0xffffffff81000000ull);
  return 0;
}
