// microscope-dwarf: the DWARF lines and inlines reader as a program of its
// own (line_table.h says why). Not for people to run: microscope runs it as
//   microscope-dwarf NAME PARENT_PID  < FILE
// and reads its standard output: 'K' and the serialized table
// (line_table_format.cc), or 'E', a StatusCode byte and the message. It
// ends with its parent (a reader looping on damaged DWARF must not outlive
// a killed recorder).
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "src/symbols/line_table.h"

int main(int argc, char** argv) {
  using namespace microscope;
  if (argc != 3) {
    std::fprintf(stderr,
                 "microscope-dwarf: run by microscope, not by hand (NAME PARENT_PID < FILE)\n");
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != std::atoi(argv[2])) return 4;  // the parent is gone already
  symbols::LineTableData data;
  std::vector<uint8_t> out;
  const Status read = symbols::ReadDwarfLines("/proc/self/fd/0", &data);
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
