// Writes a synthetic capture of N samples (bench/synthetic_capture.h) for
// the report, converter and serve benchmarks:
//   make_capture FILE N [SEED [PATHS [skewed|even [THREADS]]]]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/synthetic_capture.h"
#include "capture/writer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: make_capture FILE SAMPLES [SEED [PATHS [skewed|even [THREADS]]]]\n");
    return 2;
  }
  auto c = microscope::bench::MakeSyntheticCapture(
      std::strtoull(argv[2], nullptr, 10), argc > 3 ? uint32_t(atoi(argv[3])) : 3,
      argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 200,
      argc > 5 && std::string(argv[5]) == "skewed",
      argc > 6 ? uint32_t(std::strtoul(argv[6], nullptr, 10)) : 4);
  auto s = microscope::capture::WriteCapture(c, argv[1]);
  if (!s.ok()) {
    fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  return 0;
}
