// perf.data (file and pipe mode, zstd) and perf script text, as convert
// imports them: any input is refused or becomes a capture that validates.
// No file of this host is read (host_files off).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "capture/reader.h"
#include "formats/perf_script.h"
#include "src/import/perf_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace microscope;
  std::span<const uint8_t> bytes(data, size);
  if (import::IsPerfData(bytes)) {
    import::PerfDataOptions how;
    how.host_files = false;
    how.max_inflate = 64 << 20;
    auto c = import::ReadPerfData(bytes, "fuzz", how);
    if (c.ok() && !capture::ValidateCapture(*c).ok()) __builtin_trap();
    return 0;
  }
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (formats::LooksLikePerfScript(text)) {
    auto c = formats::ReadPerfScript(text);
    if (c.ok() && !capture::ValidateCapture(*c).ok()) __builtin_trap();
  }
  return 0;
}
