#include "src/runtimes/jit/source.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <unordered_map>

#include "base/clock.h"
#include "src/runtimes/jit/jitdump.h"
#include "src/runtimes/jit/perf_map.h"
#include "src/runtimes/process_memory.h"

namespace microscope::runtimes::jit {
namespace {

constexpr uint64_t kReadEveryNs = 10'000'000;   // a map's new lines, at most every 10 ms
constexpr uint64_t kLookEveryNs = 100'000'000;  // for a map not written yet, every 100 ms
constexpr size_t kMaxNotes = 16;

// The process's id in its own pid namespace (NSpid's last field), which
// names its map.
std::string NamespacePid(uint32_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream in(line.substr(6));
    std::string v, last;
    while (in >> v) last = v;
    if (!last.empty()) return last;
  }
  return std::to_string(pid);
}

// When the process started, in seconds since the epoch; 0 when unknown.
int64_t ProcessStart(uint32_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  uint64_t ticks = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) ticks = std::stoull(field);
  }
  std::ifstream proc_stat("/proc/stat");
  std::string line;
  int64_t boot = 0;
  while (std::getline(proc_stat, line)) {
    if (line.rfind("btime ", 0) == 0) boot = std::stoll(line.substr(6));
  }
  const long hz = sysconf(_SC_CLK_TCK);
  return boot == 0 || hz <= 0 ? 0 : boot + int64_t(ticks / uint64_t(hz));
}

class JitSource final : public record::EventlessSource, public record::JitNamer {
 public:
  int wait_fd() const override { return -1; }
  void Poll(const record::PollWindow&, record::Processor*) override {}
  record::JitNamer* jit_namer() override { return this; }

  void OnMapping(uint32_t pid, std::string_view path) override {
    const size_t slash = path.rfind('/');
    std::string_view base = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
    if (!base.starts_with("jit-") || !base.ends_with(".dump")) return;
    base = base.substr(4, base.size() - 9);
    if (base.empty() || base.find_first_not_of("0123456789") != std::string_view::npos) return;
    Process& p = processes_[pid];
    if (p.dump == nullptr) p.dump_shown = std::string(path);
  }

  std::optional<Symbol> Lookup(uint32_t pid, uint64_t address) override {
    Process& p = processes_[pid];
    const uint64_t now = MonotonicNowNs();
    if ((p.map == nullptr || p.dump == nullptr) && now - p.looked_at >= kLookEveryNs) {
      p.looked_at = now;
      Open(pid, &p);
    }
    // A miss: what was appended since, at most every kReadEveryNs.
    const bool reread = now - p.read_at >= kReadEveryNs;
    auto find = [&](auto* file, const std::string& shown) -> std::optional<Symbol> {
      if (file == nullptr) return std::nullopt;
      const JitSymbol* s = file->Find(address);
      if (s == nullptr && reread) {
        p.read_at = now;
        Result<size_t> added = file->ReadMore();
        if (!added.ok()) Note(added.status().message());
        symbols_ += added.ok() ? *added : 0;
        s = file->Find(address);
      }
      if (s == nullptr) return std::nullopt;
      ++named_;
      return Symbol{shown, s->name};
    };
    if (auto named = find(p.dump.get(), p.dump_shown)) return named;
    if (auto named = find(p.map.get(), p.map_shown)) return named;
    return std::nullopt;
  }

  void Finish(record::Processor*, capture::Settings* settings) override {
    capture::SourceSetting& s = settings->SetSource("jit", "on");
    uint64_t maps = 0, dumps = 0, malformed = 0, unknown = 0;
    for (const auto& [pid, p] : processes_) {
      maps += p.map != nullptr;
      dumps += p.dump != nullptr;
      if (p.map != nullptr) malformed += p.map->malformed();
      if (p.dump != nullptr) unknown += p.dump->unknown_records();
    }
    s.values = {
        {"perf_maps", maps},   {"jitdumps", dumps},      {"jitdump_records_not_read", unknown},
        {"symbols", symbols_}, {"frames_named", named_}, {"malformed_lines", malformed}};
    for (std::string& n : notes_) settings->notes.push_back(std::move(n));
  }

 private:
  struct Process {
    std::unique_ptr<PerfMap> map;
    std::unique_ptr<JitDump> dump;
    std::string map_shown;   // their paths as the process names them
    std::string dump_shown;  // (a mapped jitdump's, else /tmp/jit-PID.dump)
    bool map_refused = false, dump_refused = false;
    uint64_t looked_at = 0, read_at = 0;
  };

  // Opens the process's perf map and jitdump, where they are and are its own.
  void Open(uint32_t pid, Process* p) {
    const std::string nspid = NamespacePid(pid);
    p->map_shown = "/tmp/perf-" + nspid + ".map";
    if (p->dump_shown.empty()) p->dump_shown = "/tmp/jit-" + nspid + ".dump";
    struct stat proc;
    if (stat(("/proc/" + std::to_string(pid)).c_str(), &proc) != 0) return;
    // Second granularity on both sides: a file a second older is still its.
    const int64_t started = ProcessStart(pid) - 1;
    if (p->map == nullptr && !p->map_refused) {
      auto map = PerfMap::Open(TargetFile(pid, p->map_shown), proc.st_uid, started);
      if (map.ok()) {
        p->map = std::move(*map);
      } else if (map.status().code() != StatusCode::kNotFound) {
        p->map_refused = true;
        Note("perf map refused: " + map.status().message());
      }
    }
    if (p->dump == nullptr && !p->dump_refused) {
      auto dump = JitDump::Open(TargetFile(pid, p->dump_shown), proc.st_uid, started);
      if (dump.ok()) {
        p->dump = std::move(*dump);
      } else if (dump.status().code() != StatusCode::kNotFound) {
        p->dump_refused = true;
        Note("jitdump refused: " + dump.status().message());
      }
    }
  }

  void Note(const std::string& note) {
    if (notes_.size() < kMaxNotes) notes_.push_back(note);
  }

  std::unordered_map<uint32_t, Process> processes_;
  std::vector<std::string> notes_;
  uint64_t symbols_ = 0, named_ = 0;
};

}  // namespace

Result<std::unique_ptr<record::EventSource>> StartJitSource(const record::SourceContext&) {
  return std::unique_ptr<record::EventSource>(std::make_unique<JitSource>());
}

}  // namespace microscope::runtimes::jit
