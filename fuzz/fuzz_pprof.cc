// The pprof importer (gzipped or not), and what convert writes from what it
// read: a profile read back from our own writer must read again.
#include <cstddef>
#include <cstdint>
#include <span>

#include "analysis/filter.h"
#include "formats/pprof.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope;
  auto c = formats::ReadPprof(std::span<const uint8_t>(data, size));
  if (!c.ok()) return 0;
  const std::vector<uint8_t> again = formats::WritePprof(*c, analysis::SampleFilter{});
  if (!formats::ReadPprof(again).ok()) __builtin_trap();  // our own output must read
  return 0;
}
