// The file policy (base/file_policy.h) over paths a capture or a target
// could name, in a tree made once: a file, a root-only directory holding a
// secret, a root link to the file, a link of another user and a root link
// in a directory anyone can write (both to the secret), a FIFO, a loop. A
// path that opens ends at a regular file, and a path that does not name
// the secret's directory never reaches the secret (only the refused links
// lead there).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/file_policy.h"

namespace {

std::string root;
ino_t secret_ino = 0;
int inner = -1;  // a directory OpenBeneath must not leave
ino_t inner_ino = 0;

void Write(const std::string& path, mode_t mode) {
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr) abort();
  fputs("x", f);
  fclose(f);
  chmod(path.c_str(), mode);
}

void MakeTree() {
  char tmpl[] = "/tmp/fuzz-file-policy-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) abort();
  root = tmpl;
  std::atexit([] { std::filesystem::remove_all(root); });
  chmod(root.c_str(), 0755);
  Write(root + "/a", 0644);
  mkdir((root + "/secret").c_str(), 0700);
  Write(root + "/secret/s", 0600);
  struct stat st;
  if (stat((root + "/secret/s").c_str(), &st) != 0) abort();
  secret_ino = st.st_ino;
  (void)!symlink("a", (root + "/ok").c_str());
  (void)!symlink("secret/s", (root + "/theirs").c_str());
  (void)!lchown((root + "/theirs").c_str(), 65534, 65534);  // as root; else not root's anyway
  mkdir((root + "/shared").c_str(), 0777);
  chmod((root + "/shared").c_str(), 01777);
  (void)!symlink("../secret/s", (root + "/shared/l").c_str());
  mkfifo((root + "/fifo").c_str(), 0644);
  (void)!symlink("loop", (root + "/loop").c_str());
  // inner/: its one file, a link to it, and links out of it.
  mkdir((root + "/inner").c_str(), 0755);
  mkdir((root + "/inner/d").c_str(), 0755);
  Write(root + "/inner/d/f", 0644);
  if (stat((root + "/inner/d/f").c_str(), &st) != 0) abort();
  inner_ino = st.st_ino;
  (void)!symlink("d/f", (root + "/inner/in").c_str());
  (void)!symlink("../../a", (root + "/inner/d/up").c_str());
  (void)!symlink((root + "/a").c_str(), (root + "/inner/abs").c_str());
  inner = open((root + "/inner").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (inner < 0) abort();
}

// OpenBeneath: nothing outside inner/ is ever opened, whatever the path.
int Beneath(const std::string& tail) {
  microscope::Result<microscope::ScopedFd> fd =
      microscope::OpenBeneath(inner, tail, {.link_owner = geteuid()});
  if (!fd.ok()) return 0;
  struct stat st;
  if (fstat(fd->get(), &st) != 0 || st.st_ino != inner_ino) abort();
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (root.empty()) MakeTree();
  // A first byte '<' asks OpenBeneath for a path inside inner/.
  if (size > 0 && data[0] == '<')
    return Beneath(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  // A first byte '!' asks for a world-readable file (what serve shows).
  microscope::FilePolicy policy;
  policy.world_readable = size > 0 && data[0] == '!';
  const size_t skip = policy.world_readable ? 1 : 0;
  const std::string tail(reinterpret_cast<const char*>(data) + skip, size - skip);
  const std::string path = root + "/" + tail;
  microscope::Result<microscope::ScopedFd> fd = microscope::OpenUntrusted(path, policy);
  if (!fd.ok()) return 0;
  struct stat st;
  if (fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) abort();
  if (st.st_ino == secret_ino && tail.find("secret") == std::string::npos) abort();
  return 0;
}
