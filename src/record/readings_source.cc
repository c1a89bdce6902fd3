#include "src/record/readings_source.h"

#include <fcntl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/file_policy.h"
#include "base/scoped_fd.h"
#include "src/record/proc.h"

namespace microscope::record {
namespace {

constexpr uint64_t kIntervalNs = 100'000'000;
constexpr size_t kMaxFileBytes = 4096;

struct Reading {
  uint64_t time = 0;
  int32_t pid = 0;
  int32_t tid = 0;    // 0: not a thread's
  std::string scope;  // a cgroup's path, "system"; "" for a thread's
  std::string key;
  int64_t value = 0;
  std::string comm;  // a thread's, for its row when no record named it
};

// A small kernel file's text ("" when it cannot be read: gone, or a
// pressure file on a kernel booted without PSI).
std::string ReadSmall(const std::string& path) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return "";
  char buf[kMaxFileBytes];
  ssize_t n = read(fd.get(), buf, sizeof buf);
  return n > 0 ? std::string(buf, size_t(n)) : "";
}

bool ParseInt(std::string_view text, int64_t* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end != text.data();
}

// "name value" lines (cpu.stat): the value of `name`, or false.
bool StatValue(const std::string& text, std::string_view name, int64_t* out) {
  std::istringstream in(text);
  std::string k, v;
  while (in >> k >> v) {
    if (k == name) return ParseInt(v, out);
  }
  return false;
}

// Where each cgroup hierarchy is mounted: the v2 mount, and the v1 mount
// holding the cpu controller (with its mount's root, to strip from paths).
struct CgroupMounts {
  std::string v2;
  std::string v1_cpu;
  std::string v1_root;
};

CgroupMounts FindMounts() {
  CgroupMounts m;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // ID PARENT MAJ:MIN ROOT MOUNT OPTIONS ... - FSTYPE SOURCE SUPER
    std::istringstream f(line);
    std::string id, parent, dev, root, mount;
    f >> id >> parent >> dev >> root >> mount;
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype, source, super;
    tail >> fstype >> source >> super;
    if (fstype == "cgroup2" && m.v2.empty()) m.v2 = mount;
    if (fstype == "cgroup" && m.v1_cpu.empty()) {
      std::istringstream opts(super);
      std::string opt;
      while (std::getline(opts, opt, ',')) {
        if (opt == "cpu") {
          m.v1_cpu = mount;
          m.v1_root = root == "/" ? "" : root;
        }
      }
    }
  }
  return m;
}

// A path from /proc/PID/cgroup, made safe to append to a mount: no "..".
bool SafeCgroupPath(const std::string& path) {
  return !path.empty() && path[0] == '/' && path.find("/..") == std::string::npos;
}

class ReadingsSource final : public QueuedSource<Reading> {
 public:
  ReadingsSource(pid_t target, ScopedFd timer)
      : target_(target), timer_(std::move(timer)), mounts_(FindMounts()) {}

  int wait_fd() const override { return timer_.get(); }

  void Poll(const PollWindow& w, RowSink*) override {
    uint64_t expirations = 0;
    const bool due = read(timer_.get(), &expirations, sizeof expirations) == sizeof expirations;
    if (due || w.final || first_) {
      first_ = false;
      ReadAll(MonotonicNowNs());
    }
    Take(&fresh_, [&](const Reading& r) { return r.time < w.end || w.final; });
  }

  void Deliver(size_t i, RowSink* sink) override {
    const Reading& r = at(i);
    if (rows_ >= kMaxReadingRows) {
      ++dropped_;
      return;
    }
    ++rows_;
    capture::Readings::Row row;
    row.time = r.time;
    row.thread = r.tid != 0 ? sink->EventThread(uint32_t(r.pid), uint32_t(r.tid), r.time, r.comm)
                            : capture::kNone;
    row.scope = r.scope.empty() ? capture::kNone : sink->Intern(r.scope);
    row.key = sink->Intern(r.key);
    row.value = r.value;
    sink->Add(row);
  }

  void Finish(RowSink* sink, capture::Settings* settings) override {
    capture::SourceSetting& s = settings->SetSource(std::string(kName), "on");
    s.values = {{"interval_ns", kIntervalNs},
                {"rows", rows_},
                {"dropped", dropped_},
                {"threads_refused", threads_refused_}};
    if (dropped_ > 0) {
      sink->CountProblem(
          "readings not kept (the recording's bound)",
          std::to_string(dropped_) + " readings past " + std::to_string(kMaxReadingRows));
    }
  }

  static constexpr std::string_view kName = "readings";

 private:
  void Add(uint64_t time, int32_t pid, int32_t tid, std::string scope, std::string_view key,
           int64_t value, std::string comm = "") {
    fresh_.push_back({time, pid, tid, std::move(scope), std::string(key), value, std::move(comm)});
  }

  // The target and its descendants (the processes the recording follows:
  // a shell's pipeline, make's jobs), from each process's parent in
  // /proc/N/stat.
  std::vector<pid_t> Processes() const {
    std::multimap<pid_t, pid_t> children;  // ppid -> pid
    ScopedFd dir(open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.valid()) {
      for (const std::string& name : EntryNames(dir.get())) {
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string stat = ReadSmall("/proc/" + name + "/stat");
        // PID (COMM) STATE PPID ...: the command may hold spaces and parentheses.
        const size_t close = stat.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(stat.substr(close + 1));
        std::string state;
        long ppid = 0;
        if (rest >> state >> ppid) children.emplace(pid_t(ppid), pid_t(std::stol(name)));
      }
    }
    std::vector<pid_t> out = {target_};
    for (size_t i = 0; i < out.size(); ++i) {
      auto [b, e] = children.equal_range(out[i]);
      for (auto it = b; it != e && out.size() < kMaxReadingThreads; ++it) out.push_back(it->second);
    }
    return out;
  }

  void ReadAll(uint64_t now) {
    // The processes again once a second: a scan reads every /proc/N/stat.
    if (readings_++ % 10 == 0) processes_ = Processes();
    size_t threads = 0;
    for (pid_t pid : processes_) {
      const std::string proc = "/proc/" + std::to_string(pid);
      for (pid_t tid : ListTasks(pid)) {
        if (threads >= kMaxReadingThreads) {
          ++threads_refused_;
          continue;
        }
        const std::string task = proc + "/task/" + std::to_string(tid);
        const std::optional<SchedCounts> c = ReadSchedCounts(pid, tid, false);
        if (!c) continue;
        ++threads;
        std::string comm = ReadSmall(task + "/comm");
        while (!comm.empty() && comm.back() == '\n') comm.pop_back();
        Add(now, pid, tid, "", capture::kReadingOnCpu, int64_t(c->on_cpu), comm);
        Add(now, pid, tid, "", capture::kReadingRunDelay, int64_t(c->run_delay), comm);
        Add(now, pid, tid, "", capture::kReadingTimeslices, int64_t(c->timeslices), comm);
      }
    }
    ReadCgroup(now, "/proc/" + std::to_string(target_));
    for (const char* resource : {"cpu", "memory", "io"}) {
      ReadPressure(now, std::string("/proc/pressure/") + resource, "system", resource);
    }
  }

  void ReadCgroup(uint64_t now, const std::string& proc) {
    std::istringstream lines(ReadSmall(proc + "/cgroup"));
    std::string line;
    while (std::getline(lines, line)) {
      // ID:CONTROLLERS:PATH
      const size_t a = line.find(':'), b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
      if (!SafeCgroupPath(path)) continue;
      if (controllers.empty() && !mounts_.v2.empty()) {
        ReadV2(now, path, mounts_.v2 + path);
      } else if (!mounts_.v1_cpu.empty()) {
        std::istringstream names(controllers);
        std::string c;
        while (std::getline(names, c, ',')) {
          if (c != "cpu") continue;
          std::string rel = path;
          if (!mounts_.v1_root.empty()) {
            // Under the mount's root, or not reachable through this mount.
            const std::string& r = mounts_.v1_root;
            if (rel.rfind(r, 0) != 0 || (rel.size() > r.size() && rel[r.size()] != '/')) continue;
            rel = rel.substr(r.size());
          }
          // "cpu:/path", as /proc/PID/cgroup names a v1 hierarchy's cgroup.
          ReadV1(now, "cpu:" + path, mounts_.v1_cpu + rel);
        }
      }
    }
  }

  void ReadV1(uint64_t now, const std::string& scope, const std::string& dir) {
    int64_t v;
    if (ParseInt(ReadSmall(dir + "/cpu.cfs_quota_us"), &v))
      Add(now, target_, 0, scope, capture::kReadingQuota, v);
    if (ParseInt(ReadSmall(dir + "/cpu.cfs_period_us"), &v))
      Add(now, target_, 0, scope, capture::kReadingPeriod, v);
    const std::string stat = ReadSmall(dir + "/cpu.stat");
    if (StatValue(stat, "nr_periods", &v)) Add(now, target_, 0, scope, capture::kReadingPeriods, v);
    if (StatValue(stat, "nr_throttled", &v))
      Add(now, target_, 0, scope, capture::kReadingThrottledPeriods, v);
    if (StatValue(stat, "throttled_time", &v))
      Add(now, target_, 0, scope, capture::kReadingThrottled, v);
  }

  void ReadV2(uint64_t now, const std::string& scope, const std::string& dir) {
    std::istringstream max(ReadSmall(dir + "/cpu.max"));
    std::string quota, period;
    int64_t v;
    if (max >> quota >> period) {
      Add(now, target_, 0, scope, capture::kReadingQuota,
          quota == "max" ? -1 : (ParseInt(quota, &v) ? v : -1));
      if (ParseInt(period, &v)) Add(now, target_, 0, scope, capture::kReadingPeriod, v);
    }
    const std::string stat = ReadSmall(dir + "/cpu.stat");
    if (StatValue(stat, "nr_periods", &v)) Add(now, target_, 0, scope, capture::kReadingPeriods, v);
    if (StatValue(stat, "nr_throttled", &v))
      Add(now, target_, 0, scope, capture::kReadingThrottledPeriods, v);
    if (StatValue(stat, "throttled_usec", &v))
      Add(now, target_, 0, scope, capture::kReadingThrottled, v * 1000);
    ReadPressure(now, dir + "/cpu.pressure", scope, "cpu");
  }

  // "some avg10=0.00 avg60=0.00 avg300=0.00 total=N" and "full ...".
  void ReadPressure(uint64_t now, const std::string& path, const std::string& scope,
                    const std::string& resource) {
    std::istringstream lines(ReadSmall(path));
    std::string line;
    while (std::getline(lines, line)) {
      const std::string kind = line.substr(0, line.find(' '));
      const size_t at = line.find("total=");
      int64_t v;
      if ((kind != "some" && kind != "full") || at == std::string::npos ||
          !ParseInt(std::string_view(line).substr(at + 6), &v)) {
        continue;
      }
      Add(now, target_, 0, scope,
          std::string(capture::kReadingPressurePrefix) + resource + "." + kind + "_us", v);
    }
  }

  uint64_t TimeOf(const Reading& r) const override { return r.time; }

  pid_t target_;
  ScopedFd timer_;
  CgroupMounts mounts_;
  bool first_ = true;
  uint64_t readings_ = 0;
  std::vector<pid_t> processes_;
  std::vector<Reading> fresh_;
  uint64_t rows_ = 0, dropped_ = 0, threads_refused_ = 0;
};

}  // namespace

Result<std::unique_ptr<EventSource>> StartReadingsSource(const SourceContext& context) {
  ScopedFd timer(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer.valid()) return Status::Error(std::string("timerfd: ") + strerror(errno));
  itimerspec spec{};
  spec.it_interval.tv_nsec = long(kIntervalNs);
  spec.it_value.tv_nsec = long(kIntervalNs);
  if (timerfd_settime(timer.get(), 0, &spec, nullptr) != 0) {
    return Status::Error(std::string("timerfd: ") + strerror(errno));
  }
  context.settings->SetSource(std::string(ReadingsSource::kName), "on");
  return std::unique_ptr<EventSource>(
      std::make_unique<ReadingsSource>(context.target, std::move(timer)));
}

}  // namespace microscope::record
