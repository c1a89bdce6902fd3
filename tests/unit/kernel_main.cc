// main() of a unit test binary whose tests need the real kernel's BPF and
// perf_event (root, or CAP_BPF + CAP_PERFMON). Where they cannot be used
// the binary exits 77, which meson counts as skipped, rather than passing
// without running; with CI=true it fails instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <bpf/libbpf.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::strcmp(ci, "true") == 0) {
      std::fprintf(stderr, "FAIL: these tests need BPF (root) and must run in CI\n");
      return 1;
    }
    std::printf("SKIP: BPF and perf_event need root\n");
    return 77;
  }
  libbpf_set_print(nullptr);  // as the CLI does: errors come back as statuses
  doctest::Context context(argc, argv);
  return context.run();
}
