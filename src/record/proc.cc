#include "src/record/proc.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "src/symbols/elf_image.h"

namespace microscope::record {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string ProcDir(pid_t pid) {
  return "/proc/" + std::to_string(pid);
}

// The state letter and parent pid of a stat file ("pid (comm) S ppid ...").
bool ParseStat(const std::string& stat, char* state, pid_t* ppid) {
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) return false;
  *state = stat[close + 2];
  *ppid = pid_t(atoi(stat.c_str() + close + 4));
  return true;
}

// One line of /proc/PID/maps ("start-end perms offset dev inode   path"),
// if executable.
bool ParseExecutableLine(const std::string& line, ExecutableMapping* out) {
  unsigned long long start, end, offset;
  char perms[8] = {};
  int path_at = 0;
  if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
             &path_at) < 4 ||
      perms[2] != 'x') {
    return false;
  }
  *out = {start, end, offset, path_at > 0 ? line.substr(size_t(path_at)) : ""};
  return true;
}

// A mapping added to the processor, with its file's build ID.
void AddMapping(const std::string& proc, const ExecutableMapping& m, pid_t pid, uint64_t time,
                Processor* processor) {
  std::vector<uint8_t> build_id;
  if (!m.path.empty() && m.path[0] == '/') {
    // map_files reaches the mapped file even when deleted or in another
    // mount namespace.
    char link[64];
    snprintf(link, sizeof(link), "/map_files/%llx-%llx", (unsigned long long)m.start,
             (unsigned long long)m.end);
    auto id = symbols::ReadBuildId(proc + link);
    if (!id.ok()) id = symbols::ReadBuildId(m.path);
    if (id.ok()) build_id = *id;
  }
  processor->AddMapping(uint32_t(pid), m.start, m.end, m.offset, m.path, build_id, time);
}

}  // namespace

std::vector<pid_t> ListTasks(pid_t pid) {
  std::vector<pid_t> tids;
  std::string dir = ProcDir(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return tids;
  while (dirent* ent = readdir(d)) {
    if (ent->d_name[0] >= '0' && ent->d_name[0] <= '9') tids.push_back(pid_t(atoi(ent->d_name)));
  }
  closedir(d);
  std::sort(tids.begin(), tids.end());
  return tids;
}

char ThreadState(pid_t tid) {
  char state = 0;
  pid_t ppid = 0;
  return ParseStat(ReadSmallFile(ProcDir(tid) + "/stat"), &state, &ppid) ? state : 0;
}

bool ProcessGone(pid_t pid) {
  for (pid_t tid : ListTasks(pid)) {
    char state = 0;
    pid_t ppid = 0;
    std::string stat = ReadSmallFile(ProcDir(pid) + "/task/" + std::to_string(tid) + "/stat");
    if (ParseStat(stat, &state, &ppid) && state != 'Z' && state != 'X') return false;
  }
  return true;
}

std::vector<std::string> ReadCommandLine(pid_t pid) {
  std::vector<std::string> args;
  std::string cmdline = ReadSmallFile(ProcDir(pid) + "/cmdline");
  for (size_t at = 0; at < cmdline.size();) {
    size_t nul = cmdline.find('\0', at);
    if (nul == std::string::npos) nul = cmdline.size();
    args.push_back(cmdline.substr(at, nul - at));
    at = nul + 1;
  }
  return args;
}

uint32_t MaxStack() {
  int n = atoi(Trim(ReadSmallFile("/proc/sys/kernel/perf_event_max_stack")).c_str());
  return n > 0 ? uint32_t(n) : 127;
}

std::string ReadComm(pid_t pid) {
  return Trim(ReadSmallFile(ProcDir(pid) + "/comm"));
}

std::optional<SchedCounts> ReadSchedCounts(pid_t pid, pid_t tid, bool voluntary) {
  const std::string task = ProcDir(pid) + "/task/" + std::to_string(tid);
  SchedCounts c;
  std::istringstream stat(ReadSmallFile(task + "/schedstat"));
  if (!(stat >> c.on_cpu >> c.run_delay >> c.timeslices)) return std::nullopt;
  if (!voluntary) return c;
  std::istringstream status(ReadSmallFile(task + "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) {
      c.voluntary = std::strtoull(line.c_str() + line.find(':') + 1, nullptr, 10);
      break;
    }
  }
  return c;
}

void SeedFromProc(pid_t pid, uint64_t time, Processor* processor) {
  const std::string proc = ProcDir(pid);
  char state = 0;
  pid_t ppid = 0;
  ParseStat(ReadSmallFile(proc + "/stat"), &state, &ppid);
  processor->AddProcess(uint32_t(pid), uint32_t(ppid), ReadComm(pid), time);
  for (pid_t tid : ListTasks(pid)) {
    std::string name = Trim(ReadSmallFile(proc + "/task/" + std::to_string(tid) + "/comm"));
    processor->AddThread(uint32_t(pid), uint32_t(tid), name, time);
  }
  AddExecutableMappings(pid, time, processor);
}

namespace {

// False when /proc/PID/maps cannot be opened (the process is gone).
bool ReadExecutableMappings(pid_t pid, std::vector<ExecutableMapping>* out) {
  std::ifstream maps(ProcDir(pid) + "/maps");
  if (!maps) return false;
  std::string line;
  ExecutableMapping m;
  while (std::getline(maps, line)) {
    if (ParseExecutableLine(line, &m)) out->push_back(std::move(m));
  }
  return true;
}

}  // namespace

std::vector<ExecutableMapping> ExecutableMappings(pid_t pid) {
  std::vector<ExecutableMapping> out;
  ReadExecutableMappings(pid, &out);
  return out;
}

bool AddExecutableMappings(pid_t pid, uint64_t time, Processor* processor) {
  std::vector<ExecutableMapping> mappings;
  if (!ReadExecutableMappings(pid, &mappings)) return false;
  const std::string proc = ProcDir(pid);
  for (const ExecutableMapping& m : mappings) AddMapping(proc, m, pid, time, processor);
  return true;
}

bool StillMapped(pid_t pid, uint64_t start, std::string_view path) {
  const std::vector<ExecutableMapping> now = ExecutableMappings(pid);
  if (now.empty()) return true;
  for (const ExecutableMapping& m : now) {
    if (m.start == start && m.path == path) return true;
  }
  return false;
}

}  // namespace microscope::record
