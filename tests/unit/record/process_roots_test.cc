#include "src/record/process_roots.h"

#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest.h>

namespace microscope::record {

TEST_CASE("ProcessRoots: our own root and a gone process read paths as recorded") {
  ProcessRoots roots;
  CHECK(roots.Open(getpid()) == ProcessRoots::kHostRoot);
  CHECK(roots.Open(0x3fffffff) == ProcessRoots::kHostRoot);
  CHECK(roots.PathIn(ProcessRoots::kHostRoot, "/usr/bin/true") == "/usr/bin/true");
}

TEST_CASE("ProcessRoots: a process in its own mount namespace is reached through its root") {
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char ok = unshare(CLONE_NEWNS) == 0 ? 1 : 0;
    (void)!write(ready[1], &ok, 1);
    pause();
    _exit(0);
  }
  char ok = 0;
  REQUIRE(read(ready[0], &ok, 1) == 1);
  close(ready[0]);
  close(ready[1]);
  if (ok) {
    ProcessRoots roots;
    uint32_t root = roots.Open(child);
    CHECK(root != ProcessRoots::kHostRoot);
    CHECK(roots.Open(child) == root);  // one fd per distinct root
    std::string path = roots.PathIn(root, "/proc/self");
    CHECK(path.starts_with("/proc/self/fd/"));
    struct stat st;
    CHECK(stat(path.c_str(), &st) == 0);
  } else {
    MESSAGE("unshare(CLONE_NEWNS) refused here: the namespace case is not run");
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace microscope::record
