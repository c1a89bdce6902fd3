#include "src/runtimes/jit/source.h"

#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "base/clock.h"
#include "base/hex.h"
#include "base/scoped_fd.h"
#include "src/record/process_memory.h"
#include "src/record/splicer.h"
#include "src/runtimes/jit/entry_code.h"
#include "src/runtimes/jit/gdb_jit.h"
#include "src/runtimes/jit/jitdump.h"
#include "src/runtimes/jit/perf_map.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::runtimes::jit {
namespace {

constexpr uint64_t kReadEveryNs = 10'000'000;   // a map's new lines, at most every 10 ms
constexpr uint64_t kLookEveryNs = 100'000'000;  // for a map not written yet, every 100 ms
constexpr size_t kMaxNotes = 16;
constexpr size_t kMaxFiles = 4096;                   // mapped files kept per process
constexpr uint64_t kMaxObject = uint64_t(16) << 20;  // bytes of one GDB JIT object
constexpr size_t kProvenBytes = 256;  // of a function's code, read to prove its first rules

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
  explicit JitSource(record::TargetMemory* memory) : memory_(memory) {}

  int wait_fd() const override { return -1; }
  void Poll(const record::PollWindow&, record::RowSink*) override {}
  record::JitNamer* jit_namer() override { return this; }

  void OnMapping(const record::MappedModule& mapping) override {
    const std::string_view path = mapping.path;
    if (!path.starts_with("/")) return;
    Process& proc = processes_[mapping.pid];
    if (proc.files.size() < kMaxFiles &&
        proc.files.try_emplace(std::string(path), mapping.start, mapping.file_offset).second) {
      proc.unsearched.emplace_back(path);
    }
    const size_t slash = path.rfind('/');
    std::string_view base = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
    if (!base.starts_with("jit-") || !base.ends_with(".dump")) return;
    base = base.substr(4, base.size() - 9);
    if (base.empty() || base.find_first_not_of("0123456789") != std::string_view::npos) return;
    if (proc.dump == nullptr) proc.dump_shown = std::string(path);
  }

  std::optional<Symbol> Lookup(uint32_t pid, uint64_t address) override {
    std::optional<Found> f = Find(pid, address);
    if (!f) return std::nullopt;
    ++named_;
    return Symbol{f->module, f->symbol->name};
  }

  const unwind::CfiTable* UnwindTable(uint32_t pid, uint64_t address) override {
    std::optional<Found> f = Find(pid, address);
    if (!f) return nullptr;
    const unwind::CfiTable* table = f->object != nullptr ? f->object->cfi.get() : nullptr;
    if (f->object == nullptr) {
      const JitSymbol& s = *f->symbol;
      if (!s.cfi_tried) {
        s.cfi_tried = true;
        s.cfi = CodeRules(pid, s);
      }
      table = s.cfi.get();
    }
    // Rules for this code, or (outside what was proven) none: the policy
    // for code without CFI applies.
    if (table == nullptr ||
        (table->Find(address) == nullptr && table->Find(address - 1) == nullptr))
      return nullptr;
    return table;
  }

 private:
  struct GdbObject {
    std::string module;  // "[jit object ADDRESS]"
    SymbolRanges ranges;
    std::shared_ptr<const unwind::CfiTable> cfi;  // null: none
    uint64_t bytes = 0;  // what it keeps, about (the target memory's count)
  };
  // What names an address: a symbol of a jitdump, a perf map or a GDB JIT
  // object (`object`), and the module it is in.
  struct Found {
    const JitSymbol* symbol;
    std::string_view module;
    const GdbObject* object = nullptr;
  };

  std::optional<Found> Find(uint32_t pid, uint64_t address) {
    Process& p = processes_[pid];
    const uint64_t now = MonotonicNowNs();
    if ((p.map == nullptr || p.dump == nullptr) && now - p.looked_at >= kLookEveryNs) {
      p.looked_at = now;
      Open(pid, &p);
    }
    // A miss: what was appended since, at most every kReadEveryNs.
    const bool reread = now - p.read_at >= kReadEveryNs;
    auto find = [&](auto* file, const std::string& shown) -> std::optional<Found> {
      if (file == nullptr) return std::nullopt;
      const JitSymbol* s = file->Find(address);
      if (s == nullptr && reread && !p.full) {
        p.read_at = now;
        Result<size_t> added = file->ReadMore();
        if (!added.ok()) Note(added.status().message());
        symbols_ += added.ok() ? *added : 0;
        Account(pid, &p);
        s = file->Find(address);
      }
      if (s == nullptr) return std::nullopt;
      return Found{s, shown};
    };
    if (auto named = find(p.dump.get(), p.dump_shown)) return named;
    if (auto named = find(p.map.get(), p.map_shown)) return named;
    return FindGdbJit(pid, &p, address, now);
  }

  // The unwinding rules of a JIT function: from the unwinding information
  // its jitdump gave, else proven from its first instructions (read from
  // the process now: the code the sample ran, unless the JIT has since
  // put other code there).
  std::shared_ptr<const unwind::CfiTable> CodeRules(uint32_t pid, const JitSymbol& s) {
    if (!s.unwinding.empty()) {
      Result<std::unique_ptr<unwind::CfiTable>> t = JitDumpUnwindTable(s);
      if (t.ok()) return ++rules_.from_dump, std::move(*t);
      ++rules_.refused;
      Note(t.status().message());
      return nullptr;
    }
    uint8_t code[kProvenBytes];
    const size_t n = size_t(std::min<uint64_t>(s.end - s.start, sizeof(code)));
    if (!record::ProcessMemory(pid_t(pid)).Read(s.start, code, n)) return ++rules_.unread, nullptr;
    std::unique_ptr<unwind::CfiTable> t = ProveEntryCode(std::span(code, n), s.start);
    if (t == nullptr) return ++rules_.not_proven, nullptr;
    return ++rules_.proven, std::move(t);
  }

  void Forget(uint32_t pid) override {
    auto it = processes_.find(pid);
    if (it == processes_.end()) return;
    Tally(it->second);
    memory_->Give(it->second.charged);
    processes_.erase(it);
  }

  void Finish(record::RowSink*, capture::Settings* settings) override {
    capture::SourceSetting& s = settings->SetSource("jit", "on");
    for (const auto& [pid, p] : processes_) Tally(p);
    processes_.clear();
    s.values = {{"perf_maps", files_.maps},
                {"jitdumps", files_.dumps},
                {"jitdump_records_not_read", files_.unknown},
                {"gdb_jit_objects", gdb_objects_},
                {"symbols", symbols_},
                {"frames_named", named_},
                {"malformed_lines", files_.malformed},
                {"unwind_rules_from_jitdump", rules_.from_dump},
                {"unwind_rules_from_gdb_objects", rules_.from_gdb},
                {"unwind_rules_proven_from_code", rules_.proven},
                {"unwind_rules_not_proven", rules_.not_proven},
                {"unwind_rules_refused", rules_.refused},
                {"unwind_code_unread", rules_.unread},
                {"gdb_jit_objects_aliased", gdb_aliased_},
                {"processes_past_target_memory", past_bound_}};
    for (std::string& n : notes_) settings->notes.push_back(std::move(n));
  }

  struct Process {
    // Its executable file mappings (path: first start, file offset), where
    // the GDB JIT descriptor is looked for, and those not looked in yet.
    std::map<std::string, std::pair<uint64_t, uint64_t>> files;
    std::vector<std::string> unsearched;
    uint64_t descriptor = 0;
    bool gdb_read = false;  // its entries read once (read again on a miss, throttled)
    uint64_t gdb_read_at = 0;
    std::map<std::pair<uint64_t, uint64_t>, GdbObject> objects;  // by (address, size)
    std::unique_ptr<PerfMap> map;
    std::unique_ptr<JitDump> dump;
    std::string map_shown;   // their paths as the process names them
    std::string dump_shown;  // (a mapped jitdump's, else /tmp/jit-PID.dump)
    bool map_refused = false, dump_refused = false;
    uint64_t looked_at = 0, read_at = 0;
    size_t aliased = 0;    // GDB JIT entries refused at the last read, as aliases
    uint64_t charged = 0;  // bytes counted in the recording's target memory
    bool full = false;     // past the target memory: nothing more is read
  };

  // Counts what the process's files and objects keep now in the
  // recording's target memory; past its bound they are read no more.
  void Account(uint32_t pid, Process* p) {
    uint64_t now = (p->map ? p->map->bytes() : 0) + (p->dump ? p->dump->bytes() : 0);
    for (const auto& [key, object] : p->objects) now += object.bytes;
    if (now < p->charged) {
      memory_->Give(p->charged - now);
    } else if (now > p->charged && !memory_->Take(now - p->charged)) {
      memory_->Count(now - p->charged);  // read already: kept until the process goes
      StopReading(pid, p);
    }
    p->charged = now;
  }

  void StopReading(uint32_t pid, Process* p) {
    if (p->full) return;
    p->full = true;
    ++past_bound_;
    Note("pid " + std::to_string(pid) +
         ": its perf map, jitdump and GDB JIT objects are read no further: the recording's " +
         "target memory (" + std::to_string(memory_->limit() >> 20) +
         " MiB, --target-memory) is used up");
  }

  // Opens the process's perf map and jitdump, where they are and are its own.
  void Open(uint32_t pid, Process* p) {
    const std::string nspid = NamespacePid(pid);
    p->map_shown = "/tmp/perf-" + nspid + ".map";
    if (p->dump_shown.empty()) p->dump_shown = "/tmp/jit-" + nspid + ".dump";
    struct stat proc;
    if (stat(("/proc/" + std::to_string(pid)).c_str(), &proc) != 0) return;
    // The files are named as the process sees them: resolved beneath its
    // root directory (a container's), never the recorder's.
    ScopedFd root(
        open(("/proc/" + std::to_string(pid) + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) return;
    // Second granularity on both sides: a file a second older is still its.
    const int64_t started = ProcessStart(pid) - 1;
    // Each file once found, or once refused (with the reason noted).
    auto open = [&](auto* file, bool* refused, const std::string& shown, const char* what) {
      if (*file != nullptr || *refused) return;
      auto opened =
          std::remove_reference_t<decltype(**file)>::Open(root.get(), shown, proc.st_uid, started);
      if (opened.ok()) {
        *file = std::move(*opened);
      } else if (opened.status().code() != StatusCode::kNotFound) {
        *refused = true;
        Note(std::string(what) + " refused: " + opened.status().message());
      }
    };
    open(&p->map, &p->map_refused, p->map_shown, "perf map");
    open(&p->dump, &p->dump_refused, p->dump_shown, "jitdump");
  }

  // The GDB JIT interface: the descriptor found once among the process's
  // mapped files, its entries read again (on a miss, at most every
  // kReadEveryNs) and each new object's symbols read once.
  std::optional<Found> FindGdbJit(uint32_t pid, Process* p, uint64_t address, uint64_t now) {
    // Only the files mapped since the last look: this runs at each miss.
    while (p->descriptor == 0 && !p->unsearched.empty()) {
      const auto where = p->files.find(p->unsearched.back());
      p->unsearched.pop_back();
      p->descriptor = DescriptorIn(pid, where->first, where->second.first, where->second.second);
    }
    if (p->descriptor == 0) return std::nullopt;
    if (!p->full && (!p->gdb_read || now - p->gdb_read_at >= kReadEveryNs)) {
      p->gdb_read = true;
      p->gdb_read_at = now;
      ReadGdbJit(pid, p);
    }
    for (const auto& [key, object] : p->objects) {
      if (const JitSymbol* s = object.ranges.Find(address)) return Found{s, object.module, &object};
    }
    return std::nullopt;
  }

  // Where `__jit_debug_descriptor` of the file mapped at `start` (file
  // offset `offset`) is in the process; 0 when the file has none.
  uint64_t DescriptorIn(uint32_t pid, const std::string& path, uint64_t start, uint64_t offset) {
    // By the file itself: the same path in another mount namespace, or a
    // file replaced at that path, is another file.
    const std::string file_path = record::TargetFile(pid, path);
    struct stat st;
    if (stat(file_path.c_str(), &st) != 0) return 0;
    auto [it, fresh] = descriptors_.try_emplace({uint64_t(st.st_dev), uint64_t(st.st_ino)});
    if (fresh) {
      Result<symbols::ElfFile> file = symbols::OpenElfFile(file_path);
      GElf_Sym sym;
      if (file.ok() && symbols::FindSymbol(file->elf.get(), "__jit_debug_descriptor", &sym)) {
        Result<std::vector<symbols::LoadSegment>> loads = symbols::ElfLoadSegments(file->elf.get());
        it->second = {sym.st_value, loads.ok() ? *loads : std::vector<symbols::LoadSegment>()};
      }
    }
    const auto& [symbol, loads] = it->second;
    if (symbol == 0) return 0;
    uint64_t vaddr;
    if (!symbols::OffsetToVaddr(loads, offset, &vaddr)) return 0;
    return start - vaddr + symbol;
  }

  void ReadGdbJit(uint32_t pid, Process* p) {
    record::ProcessMemory memory{pid_t(pid)};
    Result<std::vector<GdbJitEntry>> entries = ReadGdbJitEntries(memory, p->descriptor);
    if (!entries.ok()) {
      Note("GDB JIT entries not read: " + entries.status().message());
      return;
    }
    // A JIT registers each object once, each in memory of its own: an entry
    // whose bytes overlap another's is an alias, never read (one object
    // named by many entries would otherwise be read and parsed again for
    // each).
    std::vector<GdbJitEntry> sorted = *entries;
    std::sort(sorted.begin(), sorted.end(), [](const GdbJitEntry& a, const GdbJitEntry& b) {
      return a.symfile < b.symfile || (a.symfile == b.symfile && a.size < b.size);
    });
    std::map<std::pair<uint64_t, uint64_t>, GdbObject> kept;
    uint64_t reach = 0;  // the end of the entries before, in address order
    size_t aliased = 0;
    for (const GdbJitEntry& e : sorted) {
      const std::pair key{e.symfile, e.size};
      if (e.symfile < reach) {
        if (aliased++ == 0 && p->aliased == 0) {
          Note("GDB JIT entry at " + HexAddress(e.symfile) + " of " + std::to_string(e.size) +
               " bytes overlaps another entry's object: not read");
        }
        continue;
      }
      reach = e.symfile + std::min<uint64_t>(e.size, UINT64_MAX - e.symfile);
      auto old = p->objects.find(key);
      if (old != p->objects.end()) {
        kept.emplace(key, std::move(old->second));
        continue;
      }
      GdbObject object;
      object.module = "[jit object " + HexAddress(e.symfile) + "]";
      // Its bytes while they are parsed count too.
      if (e.size <= kMaxObject && !memory_->Take(e.size)) {
        StopReading(pid, p);
        break;
      }
      std::vector<uint8_t> bytes(e.size <= kMaxObject ? size_t(e.size) : 0);
      struct Release {
        record::TargetMemory* memory;
        uint64_t bytes;
        ~Release() { memory->Give(bytes); }
      } release{memory_, bytes.size()};
      if (bytes.empty() || !memory.Read(e.symfile, bytes.data(), bytes.size())) {
        Note("GDB JIT object at " + HexAddress(e.symfile) + " of " + std::to_string(e.size) +
             " bytes not read");
      } else if (Result<std::vector<JitSymbol>> syms = GdbJitObjectSymbols(bytes); !syms.ok()) {
        Note("GDB JIT object at " + HexAddress(e.symfile) + ": " + syms.status().message());
      } else {
        symbols_ += syms->size();
        for (JitSymbol& s : *syms) object.ranges.Add(std::move(s));
        ++gdb_objects_;
        if (Result<std::unique_ptr<unwind::CfiTable>> cfi = GdbJitObjectCfi(bytes); cfi.ok()) {
          object.cfi = std::move(*cfi);
          ++rules_.from_gdb;
        }
        // Its rules are of its own size at most, about.
        object.bytes = object.ranges.bytes() + (object.cfi != nullptr ? bytes.size() : 0);
      }
      kept.emplace(key, std::move(object));  // an unreadable one is not read again
    }
    p->aliased = aliased;
    p->objects = std::move(kept);
    Account(pid, p);
  }

  // What a process's files held, kept past the process.
  void Tally(const Process& p) {
    files_.maps += p.map != nullptr;
    files_.dumps += p.dump != nullptr;
    if (p.map != nullptr) files_.malformed += p.map->malformed();
    if (p.dump != nullptr) files_.unknown += p.dump->unknown_records();
    gdb_aliased_ += p.aliased;
  }

  void Note(const std::string& note) {
    if (notes_.size() < kMaxNotes) notes_.push_back(note);
  }

  std::unordered_map<uint32_t, Process> processes_;
  // Per file (device, inode): its __jit_debug_descriptor's address (0:
  // none) and segments.
  std::map<std::pair<uint64_t, uint64_t>, std::pair<uint64_t, std::vector<symbols::LoadSegment>>>
      descriptors_;
  record::TargetMemory* memory_;
  uint64_t gdb_objects_ = 0, gdb_aliased_ = 0, past_bound_ = 0;
  std::vector<std::string> notes_;
  uint64_t symbols_ = 0, named_ = 0;
  struct {
    uint64_t from_dump = 0, from_gdb = 0, proven = 0, not_proven = 0, refused = 0, unread = 0;
  } rules_;
  struct {
    uint64_t maps = 0, dumps = 0, malformed = 0, unknown = 0;
  } files_;
};

}  // namespace

Result<std::unique_ptr<record::EventSource>> StartJitSource(const record::SourceContext& context) {
  return std::unique_ptr<record::EventSource>(std::make_unique<JitSource>(context.target_memory));
}

}  // namespace microscope::runtimes::jit
