// microscope-dwarf: the DWARF lines and inlines reader as a program of its
// own (line_table.h says why). Not for people to run: microscope runs it as
//   microscope-dwarf NAME PARENT_PID  < FILE
// and reads its standard output: 'K' and the serialized table
// (line_table_format.cc), or 'E', a StatusCode byte and the message. It
// ends with its parent (a reader looping on damaged DWARF must not outlive
// a killed recorder). Started as root (the recorder's rights), it gives
// them up before it reads a byte: the file is already open on its standard
// input, and libdwarf on a hostile file must not run as root.
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/symbols/line_table.h"

namespace {

// Root's rights given up for nobody's, for good; false when they could not be.
bool GiveUpRoot() {
  if (geteuid() != 0) return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
  const passwd* pw = getpwnam("nobody");
  const uid_t uid = pw != nullptr ? pw->pw_uid : 65534;
  const gid_t gid = pw != nullptr ? pw->pw_gid : 65534;
  if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 ||
      setresuid(uid, uid, uid) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return false;
  return setuid(0) != 0 && geteuid() == uid;  // and root cannot be taken back
}

}  // namespace

int main(int argc, char** argv) {
  using namespace microscope;
  if (argc != 3) {
    std::fprintf(stderr,
                 "microscope-dwarf: run by microscope, not by hand (NAME PARENT_PID < FILE)\n");
    return 2;
  }
  // Root given up first: a change of credentials clears the death signal.
  const bool unprivileged = GiveUpRoot();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != std::atoi(argv[2])) return 4;  // the parent is gone already
  symbols::LineTableData data;
  std::vector<uint8_t> out;
  const Status read = unprivileged ? symbols::ReadDwarfLines(STDIN_FILENO, &data)
                                   : Status::Error(StatusCode::kUnavailable,
                                                   "the DWARF reader could not give up root");
  if (read.ok()) {
    out = symbols::SerializeLineTable(data, 0, 0);
    out.insert(out.begin(), 'K');
  } else {
    out.assign(read.message().begin(), read.message().end());
    out.insert(out.begin(), {uint8_t('E'), uint8_t(read.code())});
  }
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = write(STDOUT_FILENO, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 3;
    done += size_t(n);
  }
  return 0;
}
