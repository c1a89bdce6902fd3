#include "src/runtimes/node/source.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "base/clock.h"
#include "base/file_policy.h"
#include "base/hex.h"
#include "base/open_file.h"
#include "base/scoped_fd.h"
#include "src/record/problem_counts.h"
#include "src/record/proc.h"
#include "src/record/process_memory.h"
#include "src/record/splicer.h"
#include "src/record/target_memory.h"
#include "src/runtimes/node/code_reader.h"
#include "src/runtimes/node/function_reader.h"
#include "src/runtimes/node/heap_reader.h"
#include "src/runtimes/node/layout.h"
#include "src/runtimes/node/line_table.h"
#include "src/runtimes/node/source_map.h"
#include "src/runtimes/node/walk.h"
#include "src/runtimes/node/walker.h"
#include "src/runtimes/per_file.h"
#include "src/runtimes/sampler.h"
#include "src/runtimes/snapshot_memory.h"

namespace microscope::runtimes::node {
namespace {

using record::FrameInterner;
using record::MappedModule;
using record::SpliceStack;
using runtimes::MemorySnapshot;
using runtimes::SnapshotMemory;

constexpr std::string_view kSourceName = "node";  // kRuntime.name
const uint8_t kBuiltinTag = record::code_tags::Allocate();
const uint8_t kHandlerTag = record::code_tags::Allocate();  // a bytecode handler's code
constexpr size_t kMaxNotes = 16;
constexpr size_t kMaxSource = size_t(64) << 20;     // UTF-16 units read of one script's source
constexpr int64_t kMaxPositionTable = 1 << 20;      // bytes of one source position table
constexpr int64_t kMaxBytecodeOffset = 1 << 30;     // a running handler's r9 taken as one
constexpr size_t kMaxCodeObjects = 50000;           // code objects read (or not found) per process
constexpr size_t kMaxSourceMap = size_t(64) << 20;  // bytes of one source map's JSON
constexpr size_t kMaxMapsPerProcess = 256;          // source maps parsed for one process
constexpr size_t kMaxIsolates = 4096;               // numbered per process
constexpr size_t kMaxNamedImages = 64;              // images whose thread names are heard
constexpr uint32_t kMaxThreadNames = 4096;          // names given to one process's threads
constexpr uint64_t kMaxThreadNamesTotal = 65536;    // names given in a recording

// What an image tells about the V8 in it, found once per file.
struct ImageInfo {
  bool v8 = false;    // carries v8dbg_ symbols
  std::string error;  // a V8 the walker cannot read, and why
  V8Layout layout;
  v8_process offsets{};
  BuiltinsRanges builtins;
};

std::unique_ptr<ImageInfo> ReadImageInfo(const std::string& path) {
  auto info = std::make_unique<ImageInfo>();
  Result<V8Layout> layout = V8LayoutFromElfFile(path);
  if (!layout.ok()) {
    if (layout.status().code() != StatusCode::kNotFound) {
      info->v8 = true;
      info->error = layout.status().message();
    }
    return info;
  }
  info->v8 = true;
  info->layout = *layout;
  Result<v8_process> offsets = ProcessOffsets(*layout);
  Result<BuiltinsRanges> builtins = BuiltinsCode(path);
  if (!offsets.ok()) {
    info->error = path + ": " + offsets.status().message();
  } else if (!builtins.ok()) {
    info->error = builtins.status().message();
  } else {
    info->offsets = *offsets;
    info->builtins = *builtins;
  }
  return info;
}

// A function as the walk saw it: its SharedFunctionInfo and the name and
// script the walk read from it.
struct FunctionKey {
  uint64_t shared, name, script;
  bool operator<(const FunctionKey& o) const {
    return std::tie(shared, name, script) < std::tie(o.shared, o.name, o.script);
  }
};
// How often, and how far apart, a function's source that could not be
// read is read again at its later samples.
constexpr uint8_t kSourceRetries = 10;
constexpr uint64_t kSourceRetryNs = 50'000'000;

struct NamedFunction {
  std::string error;  // non-empty: not named, why
  std::string name, script;
  // No script at all: a builtin V8 or Node calls as a function
  // (Array.prototype.sort, String.prototype.split, an API callback).
  bool scriptless = false;
  uint32_t first_line = 0;             // 0: not known
  int64_t start = -1;                  // where it starts in its script (UTF-16 units)
  const SourceLines* lines = nullptr;  // its script's, when read
  // Its script's source map, when one was read and maps the function's
  // start: its frames are shown where the map places them, in `source`.
  const SourceMap* map = nullptr;
  uint32_t source = 0;
  // A source not read yet: retries left, when the next may be, and why the
  // last failed.
  uint8_t source_retries = 0;
  uint64_t retry_at = 0;
  std::string unread;
};

// A script's source, read once: where its lines start, and the source map
// it names (null: none, or not read).
struct ScriptSource {
  std::unique_ptr<SourceLines> lines;
  std::shared_ptr<const SourceMap> map;  // shared by the scripts that name one file
};

struct Process {
  uint32_t pid = 0;
  const ImageInfo* image = nullptr;
  std::unique_ptr<record::ProcessMemory> memory;
  // Its /proc directory, opened when it was laid out: what is read through
  // it is this process's, never a later one's that got its pid.
  ScopedFd proc;
  // The source maps it named, by path (null: refused), each read once;
  // maps_read: files and data: URLs parsed, at most kMaxMapsPerProcess.
  std::unordered_map<std::string, std::shared_ptr<const SourceMap>> maps;
  size_t maps_read = 0;
  std::map<FunctionKey, NamedFunction> functions;
  // The script sources read (by source string).
  std::unordered_map<uint64_t, ScriptSource> sources;
  // Source position tables, by bytecode array and the function's shared
  // information (an array's memory reused by another function is another
  // key); empty: none read.
  struct Bytecodes {
    bool bytecode = false;                 // the word is a BytecodeArray
    std::vector<PositionEntry> positions;  // its source position table
    int64_t length = -1;                   // bytes of bytecode (-1: not read)
  };
  std::map<std::pair<uint64_t, uint64_t>, Bytecodes> positions;
  // Optimized code read (by its instructions' start), and the 64-byte
  // slots of pcs where none was found: each read once, at most
  // kMaxCodeObjects of them.
  std::map<uint64_t, CompiledCode> code;
  std::unordered_set<uint64_t> no_code;
  // The process's isolates (by address, as threads' TLS said), numbered in
  // the order they were first seen: the v8.isolate label's values.
  std::unordered_map<uint64_t, std::string> isolates;
  // Names Node gave its threads (uv_thread_setname), by tid, and how many
  // it gave: a process naming threads without end is heard up to
  // kMaxThreadNames times.
  std::unordered_map<uint32_t, std::string> thread_names;
  uint32_t names_given = 0;
};

class NodeSource final : public record::EventlessSource, public record::StackSplicer {
 public:
  explicit NodeSource(const record::SourceContext& context)
      : mode_(context.options.RuntimeMode(kSourceName)),
        marks_only_(mode_ == "off"),
        collector_(context.collector),
        shared_sampler_(context.runtime_sampler),
        shared_maps_(context.shared_maps),
        target_(uint32_t(context.target)),
        walk_frames_(context.options.runtime_frames),
        target_memory_(context.target_memory) {}

  Status Start() {
    ASSIGN_OR_RETURN(sampler_, Sampler::Attach(collector_, target_, walk_frames_, shared_maps_,
                                               shared_sampler_));
    sampler_->AddExecListener([this](const Sampler::Exec& e) { execs_.push_back(e.pid); });
    return OkStatus();
  }
  void Refuse(const Status& why) { refused_ = why.message(); }
  // Processes that exec `file` (a V8 image) are laid out at the exec.
  void AddImage(const std::string& file) {
    const ImageInfo* info = InfoOf(file);
    if (!info->v8 || !info->error.empty() || sampler_ == nullptr) return;
    if (Status set = SetImage(*sampler_, file, info->offsets); !set.ok())
      Problem("V8 images not given to the walker", set.message());
    HearThreadNames(file);
  }
  // Node's names of its threads (a worker's name option, Node 24 on), in
  // full where the system's cut them to 15 bytes: heard at the image's
  // uv_thread_setname, once per file (device and inode), from the file
  // open here (its offset read again from it, so the probe goes where that
  // file has the function).
  void HearThreadNames(const std::string& file) {
    if (named_images_.size() >= kMaxNamedImages) return;
    Result<ScopedFd> fd = OpenRegularFile(file);  // a path the target chose
    struct stat st;
    if (!fd.ok() || fstat(fd->get(), &st) != 0) return;
    if (!named_images_.insert({uint64_t(st.st_dev), uint64_t(st.st_ino)}).second) return;
    Result<BuiltinsRanges> image = BuiltinsCode("/proc/self/fd/" + std::to_string(fd->get()));
    if (!image.ok() || image->thread_setname == 0) return;  // Node 20: none
    if (Status s = sampler_->AttachUprobe("v8_thread_setname", fd->get(), image->thread_setname);
        !s.ok()) {
      Problem("Node's thread names not heard", s.message());
    }
  }
  // Takes the names heard, and gives those whose thread has its row (its
  // records stamped before `processed` were processed) to `sink`.
  void NameThreads(record::RowSink* sink, uint64_t processed);
  void NameThread(const v8_thread_name& e);  // to names_sink_

  int wait_fd() const override { return sampler_ != nullptr ? sampler_->wait_fd() : -1; }
  void Poll(const record::PollWindow&, record::RowSink*) override;
  void Finish(record::RowSink* sink, capture::Settings* settings) override;
  record::StackSplicer* splicer() override { return this; }

  void OnModuleMapped(const MappedModule& mapping, record::CodeMarks* marks) override;
  void Splice(const SpliceStack& stack, FrameInterner* interner) override;
  bool OwnsWalk(std::span<const uint8_t> walk) const override { return IsV8Walk(walk); }
  void OnProcessEnded(uint32_t pid) override;

 private:
  const ImageInfo* InfoOf(const std::string& file);
  // Lays out process `pid` (a new program, or one first met) by `info`,
  // the image of its executable or of a library it maps.
  void LayOut(uint32_t pid, const ImageInfo* info, bool executable);
  const NamedFunction& Function(Process* process, const V8Frame& frame);
  // Names `frame`'s function into `named`, from the walk's copy where there
  // is one (null: none), else from the live process.
  void Name(Process* process, const V8Frame& frame, const MemorySnapshot* copy,
            NamedFunction* named);
  // The source at `address` of `script`, read once (its lines and map);
  // when it cannot be read, no lines, and `unread` says why.
  ScriptSource& SourceAt(Process* process, HeapReader& heap, uint64_t address,
                         const std::string& script, Status* unread);
  // Places `named` (its start known) in its script's source at `address`
  // as `heap` sees it: its lines, first line, and where the source's map
  // puts it; false (`unread` says why) when the source cannot be read.
  bool PlaceInSource(Process* process, HeapReader& heap, uint64_t address, NamedFunction* named,
                     Status* unread);
  // Reads a function's source again (from where its script says it is now)
  // when its time has come, while it has retries left.
  void RetrySource(Process* process, const V8Frame& f, NamedFunction* named);
  // Counts a function whose source was not read, once (no more retries).
  void SourceNotRead(NamedFunction* named);
  // The source map `url` names for `script` of `process` (a data: URL, or
  // a file beside the script) into `source`, or a problem saying why not.
  void ReadSourceMap(Process* process, const std::string& script, const std::string& url,
                     ScriptSource* source);
  // Keeps the functions the walks copied since the last call.
  void TakeSnapshots();
  void Keep(const v8_snapshot& s);
  // Appends the frame to `out`, after the functions its code inlined at
  // the address it runs (innermost first).
  void Name(Process* process, const V8Frame& frame, bool innermost, capture::FrameId code,
            FrameInterner* interner, std::vector<capture::FrameId>* out);
  // The frame of a function optimized code inlined (FunctionsAt), if it is
  // named; counted either way.
  void NameInlined(Process* process, const InlinedAt& at, FrameInterner* interner,
                   std::vector<capture::FrameId>* out);
  // The frame of function `named` at `line`.
  capture::FrameId Interned(const NamedFunction& named, uint32_t line, FrameInterner* interner);
  // The frame's line, 0 when it has none (counted by why in no_line_).
  // `pc`: where its own generated code runs (0: not known).
  uint32_t Line(Process* process, const V8Frame& frame, const NamedFunction& named, bool innermost,
                uint64_t pc);
  // A compiled frame's line: an optimized one's from its code's source
  // positions at `pc`, a baseline one's from the bytecode its code runs
  // there; nullopt when no such code is found (lined as other frames).
  // `pc` is looked up as V8's profiler looks up every address, the
  // sampled one too: in the entry before it (a return address follows its
  // call; at a sample, the instruction before the one a timer interrupt
  // returns to has completed). Looked up at the pc itself, node_frames'
  // twice() had 2.1% of its samples where --cpu-prof had 13.5% (Node 24):
  // its last instruction before the inlined once()'s.
  std::optional<uint32_t> CompiledLine(Process* process, const V8Frame& frame,
                                       const NamedFunction& named, uint64_t pc);
  // The innermost frame's line from the word on top of the stack, when the
  // sample is in a builtin that made no frame (its frame pointer leads to
  // the frame's caller) and that word is an address in the frame's own
  // compiled code; nullopt when it is not one.
  std::optional<uint32_t> TopOfStackLine(Process* process, const V8Frame& frame,
                                         const NamedFunction& named);
  // The line of `position` in the frame's function (0 when it is not in
  // it), through the script's source map if it has one; `count`: a frame's
  // own line, counted in no_line_ when there is none.
  uint32_t LineAt(const NamedFunction& named, int64_t position, bool count = true);
  // The line of the bytecode at `offset` of the frame's bytecode array
  // (`registers`: taken from the interpreter's registers).
  uint32_t BytecodeLine(Process* process, const V8Frame& frame, const NamedFunction& named,
                        int64_t offset, bool registers);
  capture::FrameId Unknown(const std::string& why, FrameInterner* interner) {
    ++unknown_frames_;
    return interner->Interpreted({"[unknown JavaScript: " + why + "]", "", 0, 0});
  }
  void Problem(const std::string& kind, const std::string& example) {
    problems_.Count(kind, example);
  }

  std::string mode_;
  // --node off: V8's code is marked as frame-pointer code (so that native
  // stacks unwind through it), and nothing is walked or spliced.
  bool marks_only_;
  record::Collector* collector_;
  std::shared_ptr<Sampler>* shared_sampler_;
  record::SharedBpfMaps* shared_maps_;
  uint32_t target_;
  uint32_t walk_frames_;  // the most frames a walk keeps (record --runtime-frames)
  record::TargetMemory* target_memory_;
  std::shared_ptr<Sampler> sampler_;  // null until a V8 is mapped (auto) or refused
  std::vector<uint32_t> execs_;       // heard of since the last poll
  std::string refused_;
  PerFile<ImageInfo> by_file_;
  std::unordered_map<capture::ModuleId, const ImageInfo*> modules_;
  std::unordered_map<uint32_t, Process> processes_;
  // The functions the walks copied at first sight (node.h: struct
  // v8_snapshot), by process and as the walk saw them (a process laid out
  // by BPF at its exec may send them before user space lays it out); their
  // bytes count in the recording's target memory.
  std::unordered_map<uint32_t, std::map<FunctionKey, MemorySnapshot>> snapshots_;
  uint64_t snapshots_kept_ = 0, named_from_snapshots_ = 0;
  std::vector<std::string> notes_;
  record::ProblemCounts problems_;
  uint64_t stacks_ = 0, stacks_named_ = 0, walks_ = 0, js_frames_ = 0, unknown_frames_ = 0;
  uint64_t walks_cut_ = 0;      // that reached the frame bound
  uint64_t running_lines_ = 0;  // innermost frames' lines from a running handler's registers
  uint64_t walks_labeled_ = 0;  // with the thread's isolate
  // What Splice reuses from one stack to the next: no allocation per stack.
  V8Walk walk_;
  V8SpliceScratch scratch_;
  struct {
    Process* process = nullptr;
    FrameInterner* interner = nullptr;
    uint8_t leaf_tag = 0;  // the code tag of the stack's leaf (kHandlerTag, kBuiltinTag, ...)
  } splicing_;             // the stack being spliced, for hooks_ (which capture only this)
  V8SpliceHooks hooks_{[this](const V8Frame& f, bool running, capture::FrameId code,
                              std::vector<capture::FrameId>* out) {
                         Name(splicing_.process, f, running, code, splicing_.interner, out);
                       },
                       [this](const std::string& why) { return Unknown(why, splicing_.interner); }};
  // The functions at the pc of the optimized frame being named, innermost
  // first (CompiledLine; its own function last), or empty.
  std::vector<InlinedAt> inlined_;
  uint64_t inlined_frames_ = 0;     // frames of inlined functions
  uint64_t inlined_lines_ = 0;      // of them, with a line
  uint64_t inlined_not_named_ = 0;  // inlined functions left out: not read, or not named
  struct {
    uint64_t innermost = 0;  // the frame the leaf runs (its offset slot may be stale)
    uint64_t compiled = 0;   // baseline and optimized frames (no offset slot)
    uint64_t no_table = 0;   // no position table or line read
    uint64_t no_source = 0;  // a function with no script: a builtin's or the embedder's
    uint64_t unmapped = 0;   // a source map that places it nowhere, or in another source
    uint64_t code = 0;       // optimized code without a position at pc, or another function's
    uint64_t Total() const { return innermost + compiled + no_table + no_source + unmapped + code; }
  } no_line_;
  uint64_t baseline_lines_ = 0;     // baseline frames' lines, from their code's bytecode offsets
  uint64_t compiled_lines_ = 0;     // optimized frames' lines, from their code's positions
  uint64_t code_read_ = 0;          // optimized code objects read
  uint64_t top_lines_ = 0;          // innermost compiled frames lined from the top of the stack
  uint64_t sources_read_late_ = 0;  // functions whose source was read at a later sample
  ScriptSource unread_source_;      // what SourceAt gives for a source it could not read
  std::string code_error_;          // why the first pc without code had none
  uint64_t code_missing_ = 0;       // pcs where no Code was found (lined as before)
  uint64_t maps_read_ = 0, functions_mapped_ = 0, mapped_lines_ = 0;
  std::set<std::pair<uint64_t, uint64_t>> named_images_;  // HearThreadNames'
  std::vector<v8_thread_name> names_heard_;  // not given yet: their threads' rows may not be
  record::RowSink* names_sink_ = nullptr;    // where they go (the processor's rows)
  uint64_t threads_named_ = 0, thread_names_given_ = 0, thread_names_refused_ = 0;
};

const ImageInfo* NodeSource::InfoOf(const std::string& file) {
  return by_file_.Get(file, ReadImageInfo, [this](const ImageInfo& info) {
    if (info.v8 && !info.error.empty() && notes_.size() < kMaxNotes)
      notes_.push_back("JavaScript frames not walked: " + info.error);
  });
}

void NodeSource::LayOut(uint32_t pid, const ImageInfo* info, bool executable) {
  Process& p = processes_[pid];
  p = Process{};  // another program now: nothing named before holds
  p.pid = pid;
  p.image = info;
  p.memory = std::make_unique<record::ProcessMemory>(pid_t(pid));
  p.proc =
      ScopedFd(open(("/proc/" + std::to_string(pid)).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  (void)sampler_->Follow(pid);
  v8_process offsets = info->offsets;
  // A library's thread-local variables lie where the loader put its block.
  if (!executable) offsets.isolate_tls = 0;
  if (Status set = SetProcess(*sampler_, pid, offsets); !set.ok())
    Problem("V8 processes not laid out", set.message());
}

void NodeSource::OnModuleMapped(const MappedModule& mapping, record::CodeMarks* marks) {
  if (mapping.path.empty() || mapping.path[0] != '/') return;  // anonymous code, [vdso], ...
  auto [it, fresh] = modules_.try_emplace(mapping.module, nullptr);
  if (fresh) {
    const std::string file = record::TargetFile(mapping.pid, mapping.path);
    it->second = InfoOf(file);
    const ImageInfo& info = *it->second;
    if (info.v8 && info.error.empty()) {
      marks->MarkRuntime(mapping.module, capture::Runtime::kV8);
      const FileRange &all = info.builtins.all, &handlers = info.builtins.handlers;
      if (!marks_only_ && handlers.begin < handlers.end) {
        if (all.begin < handlers.begin)
          marks->Mark(mapping.module, all.begin, handlers.begin, kBuiltinTag);
        marks->Mark(mapping.module, handlers.begin, handlers.end, kHandlerTag);
        if (handlers.end < all.end) marks->Mark(mapping.module, handlers.end, all.end, kBuiltinTag);
      } else if (!marks_only_) {
        marks->Mark(mapping.module, all.begin, all.end, kBuiltinTag);
      }
      marks->MarkFramePointerCode(mapping.module, all.begin, all.end);
    }
  }
  const ImageInfo* info = it->second;
  if (!info->v8 || !info->error.empty()) return;
  // V8's generated code keeps frame pointers: the process's anonymous code
  // is unwound by them under -g dwarf too, walker or not (marked in record
  // order, which an exec then undoes).
  marks->MarkAnonymousFramePointers(mapping.pid);
  if (marks_only_ || !refused_.empty()) return;
  if (sampler_ == nullptr) {
    if (Status started = Start(); !started.ok()) {
      Refuse(started);
      return;
    }
  }
  if (fresh) AddImage(record::TargetFile(mapping.pid, mapping.path));
  auto known = processes_.find(mapping.pid);
  if (known != processes_.end() && known->second.image == info) return;  // laid out already
  // A forked child's copied mappings, processed after it exec'd another
  // program, must not lay it out as V8 again.
  if (!record::StillMapped(pid_t(mapping.pid), mapping.start, mapping.path)) return;
  struct stat exe, image;
  const bool executable =
      stat(("/proc/" + std::to_string(mapping.pid) + "/exe").c_str(), &exe) == 0 &&
      stat(record::TargetFile(mapping.pid, mapping.path).c_str(), &image) == 0 &&
      exe.st_dev == image.st_dev && exe.st_ino == image.st_ino;
  LayOut(mapping.pid, info, executable);
}

void NodeSource::OnProcessEnded(uint32_t pid) {
  // Its functions, sources and maps (a map's deleter gives back its bytes),
  // and the walks' copies of its functions, those still in the ring too: a
  // long recording of many short programs keeps only what the living ones
  // need.
  TakeSnapshots();
  // Names heard for its threads: their rows exist now (its last event was
  // processed), and its layout goes below.
  if (names_sink_ != nullptr) {
    std::erase_if(names_heard_, [&](const v8_thread_name& e) {
      if (e.pid != pid) return false;
      NameThread(e);
      return true;
    });
  }
  if (auto p = processes_.find(pid); p != processes_.end()) {
    for (auto& [key, named] : p->second.functions) SourceNotRead(&named);
    processes_.erase(p);
  }
  auto copies = snapshots_.find(pid);
  if (copies == snapshots_.end()) return;
  size_t bytes = 0;
  for (const auto& [key, snapshot] : copies->second) bytes += snapshot.bytes;
  if (target_memory_ != nullptr) target_memory_->Give(bytes);
  snapshots_.erase(copies);
}

void NodeSource::TakeSnapshots() {
  if (sampler_ == nullptr) return;
  Status drained = sampler_->DrainRing("v8_snaps", [this](std::span<const uint8_t> record) {
    if (record.size() < sizeof(v8_snapshot)) return;
    v8_snapshot s;
    std::memcpy(&s, record.data(), sizeof(s));
    Keep(s);
  });
  if (!drained.ok()) Problem("JavaScript function copies not read", drained.message());
}

void NodeSource::Keep(const v8_snapshot& s) {
  // A function named already (BPF's record of what it sent was evicted and
  // it sent it again) needs no copy: its name is kept.
  if (auto p = processes_.find(s.pid);
      p != processes_.end() && p->second.functions.contains({s.shared, s.name, s.script}))
    return;
  MemorySnapshot snapshot;
  const struct {
    const uint8_t* bytes;
    size_t room;
  } regions[V8_SNAP_REGIONS] = {
      {s.shared_bytes, sizeof(s.shared_bytes)},
      {s.shared_map, sizeof(s.shared_map)},
      {s.name_bytes, sizeof(s.name_bytes)},
      {s.name_map, sizeof(s.name_map)},
      {s.scope_name, sizeof(s.scope_name)},
      {s.scope_name_map, sizeof(s.scope_name_map)},
      {s.inferred, sizeof(s.inferred)},
      {s.inferred_map, sizeof(s.inferred_map)},
      {s.script_bytes, sizeof(s.script_bytes)},
      {s.script_map, sizeof(s.script_map)},
      {s.url, sizeof(s.url)},
      {s.url_map, sizeof(s.url_map)},
  };
  for (int r = 0; r < V8_SNAP_REGIONS; ++r)
    snapshot.Add(s.address[r], regions[r].bytes, s.size[r], regions[r].room);
  if (!runtimes::KeepSnapshot(&snapshots_[s.pid], FunctionKey{s.shared, s.name, s.script},
                              std::move(snapshot), target_memory_)) {
    Problem("JavaScript function copies not kept",
            "the recording keeps at most --target-memory of what its targets write");
    return;
  }
  ++snapshots_kept_;
}

void NodeSource::NameThreads(record::RowSink* sink, uint64_t processed) {
  if (named_images_.empty() || sink == nullptr) return;
  names_sink_ = sink;
  Status read = sampler_->DrainRing("v8_thread_names", [&](std::span<const uint8_t> record) {
    v8_thread_name e;
    if (record.size() < sizeof(e)) return;
    std::memcpy(&e, record.data(), sizeof(e));
    // As many as the recording could give, waiting: past that, refused.
    if (thread_names_given_ + names_heard_.size() >= kMaxThreadNamesTotal) {
      ++thread_names_refused_;
      return;
    }
    names_heard_.push_back(e);
  });
  if (!read.ok()) Problem("Node's thread names not read", read.message());
  // In the order given; a name waits until its thread's start was processed.
  size_t given = 0;
  while (given < names_heard_.size() && names_heard_[given].time < processed)
    NameThread(names_heard_[given++]);
  names_heard_.erase(names_heard_.begin(), names_heard_.begin() + ptrdiff_t(given));
}

void NodeSource::NameThread(const v8_thread_name& e) {
  auto p = processes_.find(e.pid);
  const std::string_view name(e.name, strnlen(e.name, sizeof(e.name)));
  if (p == processes_.end() || name.empty()) return;  // ended, or exec'd something else
  if (p->second.names_given >= kMaxThreadNames || thread_names_given_ >= kMaxThreadNamesTotal) {
    ++thread_names_refused_;
    return;
  }
  std::string& given = p->second.thread_names[e.tid];
  if (given == name) return;
  if (given.empty()) ++threads_named_;
  given = name;
  ++p->second.names_given;
  ++thread_names_given_;
  names_sink_->NameThread(e.pid, e.tid, e.time, given);
}

void NodeSource::Poll(const record::PollWindow& window, record::RowSink* sink) {
  if (sampler_ == nullptr) return;
  if (Status s = sampler_->DrainExecs(); !s.ok()) Problem("runtime execs not read", s.message());
  // A followed process that exec'd a V8 image is laid out now, not when its
  // mapping records are processed (a launcher such as perf or a shell runs
  // node; a new image is known to BPF from here on, for later execs).
  for (uint32_t pid : execs_) {
    const std::string exe = "/proc/" + std::to_string(pid) + "/exe";
    const ImageInfo* info = InfoOf(exe);
    if (!info->v8 || !info->error.empty()) continue;
    AddImage(exe);
    LayOut(pid, info, true);
  }
  execs_.clear();
  NameThreads(sink, window.processed);  // after the execs' layouts: their names are theirs
}

ScriptSource& NodeSource::SourceAt(Process* process, HeapReader& heap, uint64_t address,
                                   const std::string& script, Status* unread) {
  auto [it, read] = process->sources.try_emplace(address);
  ScriptSource& source = it->second;
  if (!read) return source;
  Result<std::u16string> text = heap.ReadCodeUnits(address, kMaxSource);
  if (!text.ok()) {
    *unread = text.status();
    process->sources.erase(it);  // read again when asked again
    return unread_source_;
  }
  source.lines = std::make_unique<SourceLines>(*text);
  // Node's own scripts (node:internal/...) ship no maps.
  std::optional<std::string> url;
  if (!script.starts_with("node:")) url = SourceMappingUrl(*text);
  if (url) ReadSourceMap(process, script, *url, &source);
  return source;
}

bool NodeSource::PlaceInSource(Process* process, HeapReader& heap, uint64_t address,
                               NamedFunction* named, Status* unread) {
  ScriptSource& source = SourceAt(process, heap, address, named->script, unread);
  if (source.lines == nullptr) return false;
  named->first_line = source.lines->LineOf(named->start);
  named->lines = source.lines.get();
  // The function's own name in the map, at its start or the name just
  // before it (V8 starts a function at its parameters).
  const SourceLines* lines = source.lines.get();
  auto place = [&](int64_t at) -> std::optional<OriginalPlace> {
    if (source.map == nullptr || at < 0) return std::nullopt;
    return source.map->Find(lines->LineOf(at) - 1, lines->ColumnOf(at));
  };
  if (std::optional<OriginalPlace> start = place(named->start)) {
    named->map = source.map.get();
    named->source = start->source;
    named->first_line = start->line + 1;
    // A function V8 names (a minified `function e(t)`): the map's name at
    // its start, or at the name just before it. An anonymous one keeps
    // V8's: the name before `(x) => ...` is the callee's (`map`, `then`).
    std::optional<OriginalPlace> before = place(named->start - 1);
    const int32_t name = start->name >= 0 ? start->name
                         : before && before->source == start->source && before->name >= 0
                             ? before->name
                             : -1;
    if (name >= 0 && !named->map->name(name).empty() && named->name != "(anonymous)")
      named->name = named->map->name(name);
    ++functions_mapped_;
  }
  return true;
}

void NodeSource::RetrySource(Process* process, const V8Frame& f, NamedFunction* named) {
  const uint64_t now = MonotonicNowNs();
  if (now < named->retry_at) return;
  --named->source_retries;
  named->retry_at = now + kSourceRetryNs;
  const V8Layout& l = process->image->layout;
  HeapReader live(process->memory.get(), &l);
  Result<uint64_t> source = live.Word(f.script, l.script_source);
  Status unread = OkStatus();
  if (source.ok() && live.IsObject(*source) &&
      PlaceInSource(process, live, *source, named, &unread)) {
    ++sources_read_late_;
    named->source_retries = 0;
    named->unread.clear();
  } else if (named->source_retries == 0) {
    SourceNotRead(named);
  }
}

void NodeSource::SourceNotRead(NamedFunction* named) {
  if (named->unread.empty()) return;
  Problem("JavaScript sources not read (no first lines)", named->unread);
  named->unread.clear();
  named->source_retries = 0;
}

const NamedFunction& NodeSource::Function(Process* process, const V8Frame& f) {
  const FunctionKey key{f.shared, f.name, f.script};
  if (auto known = process->functions.find(key); known != process->functions.end()) {
    NamedFunction& named = known->second;
    if (named.lines == nullptr && named.source_retries > 0) RetrySource(process, f, &named);
    return named;
  }
  // As the walk that first met it copied it, where it did (the process may
  // have exited since); else from the live process. The copy is given back
  // once read: the name is kept, and BPF copies a function once, so a
  // process's copies cost only what is not yet named, not its whole life.
  // It is taken before the key is entered: Keep passes over copies of what
  // is named already.
  TakeSnapshots();
  NamedFunction& named = process->functions[key];
  std::optional<MemorySnapshot> copy;
  if (auto by_pid = snapshots_.find(process->pid); by_pid != snapshots_.end()) {
    if (auto c = by_pid->second.find(key); c != by_pid->second.end()) {
      copy = std::move(c->second);
      by_pid->second.erase(c);
    }
  }
  Name(process, f, copy ? &*copy : nullptr, &named);
  if (copy && target_memory_ != nullptr) target_memory_->Give(copy->bytes);
  return named;
}

void NodeSource::Name(Process* process, const V8Frame& f, const MemorySnapshot* copy,
                      NamedFunction* out) {
  NamedFunction& named = *out;
  const V8Layout& l = process->image->layout;
  std::optional<SnapshotMemory> copied;
  if (copy != nullptr) copied.emplace(process->pid, process->memory.get(), *copy);
  HeapReader heap(copied ? &*copied : process->memory.get(), &l);
  Result<FunctionInfo> info = ReadFunction(heap, l, f.shared, f.name, f.script);
  if (info.ok() && copied) ++named_from_snapshots_;
  if (!info.ok()) {
    named.error = info.status().code() == StatusCode::kNotFound
                      ? "function information moved since the sample"
                      : "function information no longer in memory (freed since the sample)";
    Problem("JavaScript functions not named", info.status().message());
    return;
  }
  if (!info->script_error.empty())
    Problem("JavaScript scripts not named (their functions are)", info->script_error);
  named.name = std::move(info->name);
  named.script = std::move(info->script);
  named.scriptless = named.script.empty() && info->script_source == 0 && info->script_error.empty();
  if (info->start >= 0 && info->script_source != 0) {
    named.start = info->start;
    Status unread = OkStatus();
    bool read = PlaceInSource(process, heap, info->script_source, &named, &unread);
    if (!read && copied) {
      // The walk's copy of the script gave where its source was at the
      // sample: a young string (a CommonJS module's text) the scavenger has
      // moved since. The script says where it is now.
      HeapReader live(process->memory.get(), &l);
      Result<uint64_t> now = live.Word(f.script, l.script_source);
      if (now.ok() && *now != info->script_source && live.IsObject(*now)) {
        unread = OkStatus();
        read = PlaceInSource(process, live, *now, &named, &unread);
      }
    }
    if (!read) {
      // Read again at its later samples, a while apart: a source being
      // moved may be unreadable at one moment (a CI run named a fixture's
      // two hottest functions so and kept them lineless to the end). A
      // problem when that too fails, or its process ends first.
      named.source_retries = kSourceRetries;
      named.retry_at = MonotonicNowNs() + kSourceRetryNs;
      named.unread = unread.ok() ? named.script + ": its source not read" : unread.message();
    }
  }
}

// The user process `proc` (its /proc directory) opens files as: its
// filesystem uid (the last of status's Uid line), not the owner of its
// /proc directory (root's when it is not dumpable, as after a setuid).
std::optional<uid_t> FileUid(int proc) {
  ScopedFd fd(openat(proc, "status", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  Result<std::vector<uint8_t>> bytes = ReadWhole(fd.get(), 1 << 16);
  if (!bytes.ok()) return std::nullopt;
  const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  const size_t at = text.find("\nUid:");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view line = text.substr(at + 5, text.find('\n', at + 5) - (at + 5));
  unsigned long ids[4];
  if (std::sscanf(std::string(line).c_str(), "%lu %lu %lu %lu", &ids[0], &ids[1], &ids[2],
                  &ids[3]) != 4)
    return std::nullopt;
  return uid_t(ids[3]);
}

// A file a target's script names (its source map), as the target sees it
// (beneath its root directory), read only when anyone could read it or it
// is the file of the user the target opens files as: never shown to
// whoever could not read it. `proc`: the target's /proc directory.
Result<std::vector<uint8_t>> ReadTargetFile(int proc, const std::string& path, size_t limit,
                                            record::TargetMemory* memory) {
  const Status gone =
      Status::Error(StatusCode::kNotFound, path + ": its process exited before it was read");
  if (proc < 0) return gone;
  ScopedFd root(openat(proc, "root", O_PATH | O_DIRECTORY | O_CLOEXEC));
  const std::optional<uid_t> uid = FileUid(proc);
  if (!root.valid() || !uid) return gone;
  const std::string relative = path.substr(std::min(path.size(), path.find_first_not_of('/')));
  Result<ScopedFd> fd = OpenBeneath(root.get(), relative, {.world_readable = true});
  if (!fd.ok()) {
    Result<ScopedFd> own = OpenBeneath(root.get(), relative, {.owner = *uid, .link_owner = *uid});
    if (!own.ok())
      return Status::Error(fd.status().code(),
                           path + ": neither readable by anyone (" + fd.status().message() +
                               ") nor its process's user's (" + own.status().message() + ")");
    fd = std::move(own);
  }
  // Its bytes count while they are read and parsed.
  struct stat st;
  if (fstat(fd->get(), &st) != 0) return gone;
  const uint64_t size = std::min<uint64_t>(uint64_t(st.st_size), limit + 1);
  if (memory != nullptr && !memory->Take(size))
    return Status::Error(StatusCode::kTooLarge,
                         path + ": past the recording's target memory (--target-memory)");
  Result<std::vector<uint8_t>> bytes = ReadWhole(fd->get(), limit);
  if (memory != nullptr) memory->Give(size);
  if (!bytes.ok())
    return Status::Error(bytes.status().code(), path + ": " + bytes.status().message());
  return bytes;
}

void NodeSource::ReadSourceMap(Process* process, const std::string& script, const std::string& url,
                               ScriptSource* source) {
  auto refuse = [&](const std::string& why) { Problem("JavaScript source maps not read", why); };
  std::string_view path = script;
  if (path.starts_with("file://")) path.remove_prefix(7);
  const bool file = path.starts_with('/');
  const std::string dir = file ? std::string(path.substr(0, path.rfind('/'))) : "";
  std::string key;  // a file's path: read once for every script naming it
  if (!url.starts_with("data:")) {
    if (url.find("://") != std::string::npos && !url.starts_with("file://"))
      return refuse(script + ": " + url.substr(0, 200) + ": not a file (maps are not fetched)");
    if (!file && !url.starts_with('/') && !url.starts_with("file://"))
      return refuse(script + ": its map " + url.substr(0, 200) + " is relative to no file");
    key = ResolvePath(dir, url);
    if (auto known = process->maps.find(key); known != process->maps.end()) {
      source->map = known->second;
      return;
    }
  }
  std::shared_ptr<const SourceMap>* cached = key.empty() ? nullptr : &process->maps[key];
  if (process->maps_read >= kMaxMapsPerProcess)
    return refuse(script + ": more than " + std::to_string(kMaxMapsPerProcess) +
                  " source maps in process " + std::to_string(process->pid));
  ++process->maps_read;
  std::string json, where, base;
  if (key.empty()) {
    Result<std::string> decoded = DecodeDataUrl(url, kMaxSourceMap);
    if (!decoded.ok()) return refuse(script + ": " + decoded.status().message());
    json = std::move(*decoded);
    where = script + " (its data: URL)";
    base = dir;
  } else {
    Result<std::vector<uint8_t>> bytes =
        ReadTargetFile(process->proc.get(), key, kMaxSourceMap, target_memory_);
    if (!bytes.ok()) return refuse(bytes.status().message());
    json.assign(bytes->begin(), bytes->end());
    where = key;
    base = key.substr(0, key.rfind('/'));
  }
  Result<SourceMap> map = SourceMap::Parse(json, where, base);
  if (!map.ok()) return refuse(map.status().message());
  if (target_memory_ != nullptr && !target_memory_->Take(map->bytes())) {
    process->maps_read = kMaxMapsPerProcess;  // no more for this process
    return refuse(where + ": past the recording's target memory (--target-memory)");
  }
  auto kept = std::shared_ptr<const SourceMap>(new SourceMap(std::move(*map)),
                                               [memory = target_memory_](const SourceMap* m) {
                                                 if (memory != nullptr) memory->Give(m->bytes());
                                                 delete m;
                                               });
  source->map = kept;
  if (cached != nullptr) *cached = std::move(kept);
  ++maps_read_;
}

// The code read before whose instructions hold `pc`; the map's end if none.
std::map<uint64_t, CompiledCode>::iterator CodeHolding(Process* process, uint64_t pc) {
  auto it = process->code.upper_bound(pc);
  if (it == process->code.begin()) return process->code.end();
  --it;
  return pc <= it->second.start + it->second.size ? it : process->code.end();
}

std::optional<uint32_t> NodeSource::CompiledLine(Process* process, const V8Frame& f,
                                                 const NamedFunction& named, uint64_t pc) {
  if (named.scriptless || named.lines == nullptr) return std::nullopt;
  auto& code = process->code;
  auto it = CodeHolding(process, pc);
  const CompiledCode* found = nullptr;
  if (it != code.end()) {
    found = &it->second;
    // Code whose memory another function's code took since: read again
    // (when the one kept no longer holds its place; a frame that is not
    // its code's keeps it).
    const bool other = (found->optimized && found->shared != f.shared) ||
                       (found->baseline && found->bytecode_array != f.bytecode_array);
    if (other && !StillThere(*process->memory, process->image->layout, *found)) {
      code.erase(it);
      found = nullptr;
    }
  }
  if (found == nullptr) {
    const uint64_t slot = pc / 64;
    // No Code there: the frame is placed on other code than its own (V8's
    // builtins before their copy's mapping was bound to node's image, an
    // interpreted frame among them), which gets its line as before.
    if (process->no_code.count(slot) != 0 ||
        code.size() + process->no_code.size() >= kMaxCodeObjects)
      return std::nullopt;
    Result<CompiledCode> read = ReadCompiledCode(*process->memory, process->image->layout, pc);
    if (!read.ok()) {
      // Code V8 keeps elsewhere than in a Code's instruction stream (a few
      // pcs of a real program), or freed since the sample: counted, with
      // the first reason in the notes. Not looked for again where none was
      // found (a long search), but where the pc's own page no longer reads:
      // its pages may hold other code later.
      if (read.status().code() != StatusCode::kNotFound) process->no_code.insert(slot);
      if (code_error_.empty()) code_error_ = read.status().message();
      ++code_missing_;
      return std::nullopt;
    }
    ++code_read_;
    found = &code.insert_or_assign(read->start, std::move(*read)).first->second;
  }
  if (found->baseline && found->bytecode_array == f.bytecode_array) {
    // The bytecode its code runs at pc, and that bytecode's line.
    std::optional<int64_t> offset = BaselineOffset(*found, pc, /*return_address=*/true);
    if (!offset) return ++no_line_.compiled, 0;
    const uint64_t before = no_line_.Total();
    const uint32_t line = BytecodeLine(process, f, named, *offset, false);
    if (no_line_.Total() == before) ++baseline_lines_;
    return line;
  }
  if (!found->optimized) return std::nullopt;
  if (found->shared != f.shared) return ++no_line_.code, 0;
  if (!FunctionsAt(*found, pc, /*return_address=*/true, &inlined_) ||
      inlined_.back().position < 0) {
    inlined_.clear();
    return ++no_line_.code, 0;
  }
  const uint32_t line = LineAt(named, inlined_.back().position);
  if (line != 0) ++compiled_lines_;
  return line;
}

uint32_t NodeSource::Line(Process* process, const V8Frame& f, const NamedFunction& named,
                          bool innermost, uint64_t pc) {
  const V8Layout& l = process->image->layout;
  // A builtin run as a function (Array.prototype.map, an iterator's next)
  // has no script: no line on any path, counted as such (on prettier 3,300
  // of these frames were counted as compiled frames without a line).
  if (named.scriptless) return ++no_line_.no_source, 0;
  if (pc != 0 && l.CodeKnown()) {
    if (std::optional<uint32_t> line = CompiledLine(process, f, named, pc)) return *line;
  }
  HeapReader heap(process->memory.get(), &l);
  // V8 writes an interpreted frame's bytecode offset to the frame before it
  // calls out (InterpreterAssembler::CallPrologue; a call bytecode's
  // handler as it starts): the slot of a frame whose handler called native
  // code (the runtime, a builtin, a system call) is current; that of a
  // frame whose handler is running at the leaf may be stale. A running
  // handler keeps the offset in r9 and the frame's bytecode array in r12
  // (V8's x64 interpreter registers): taken when the leaf is a handler's
  // code and r12 was this frame's array. Baseline and optimized frames keep
  // no offset there at all.
  const bool registers = innermost && splicing_.leaf_tag == kHandlerTag;
  int64_t slot;
  if (registers) {
    const std::optional<uint64_t>& r9 = walk_.interpreter_offset;
    if (!r9 || walk_.frames.empty() || f.fp != walk_.frames[0].fp ||
        *r9 > uint64_t(kMaxBytecodeOffset)) {
      return ++no_line_.innermost, 0;
    }
    slot = int64_t(*r9);
  } else if (innermost && splicing_.leaf_tag == record::code_tags::kAnonymousCode) {
    return ++no_line_.compiled, 0;  // its own generated code runs: baseline or optimized
  } else if (innermost &&
             (splicing_.leaf_tag != kBuiltinTag ||
              process->image->builtins.handlers.begin == process->image->builtins.handlers.end)) {
    // Native code, not placed, or a builtin that may be a handler (this
    // image's handlers are not one block of their own).
    return ++no_line_.innermost, 0;
  } else {
    if (!heap.IsSmi(f.bytecode_offset)) {
      // A compiled frame (no offset slot): its code's address, if the
      // builtin the sample is in returns there.
      if (innermost) {
        if (std::optional<uint32_t> line = TopOfStackLine(process, f, named)) return *line;
      }
      return ++no_line_.compiled, 0;
    }
    slot = heap.SmiValue(f.bytecode_offset);
  }
  return BytecodeLine(process, f, named, slot - (l.bytecode_header - l.heap_object_tag), registers);
}

// Whether the bytes before `address` end in a call, as V8's code calls a
// builtin: call rel32 (e8), or call through a register or memory (ff /2,
// with a REX prefix or not, no displacement, 8 or 32 bits of it).
bool AfterCall(record::ProcessMemory& memory, uint64_t address) {
  uint8_t b[8];
  if (address < sizeof(b) || !memory.Read(address - sizeof(b), b, sizeof(b))) return false;
  if (b[3] == 0xe8) return true;  // e8 and 4 bytes of offset
  // ff, then a ModRM with reg 2 whose mod says how many bytes follow it.
  for (size_t at = 0; at + 1 < sizeof(b); ++at) {
    if (b[at] != 0xff || ((b[at + 1] >> 3) & 7) != 2) continue;
    const uint8_t mod = b[at + 1] >> 6, rm = b[at + 1] & 7;
    size_t length = 2 +
                    (mod == 1   ? 1
                     : mod == 2 ? 4
                                : 0) +
                    (mod != 3 && rm == 4 ? 1 : 0) + (mod == 0 && rm == 5 ? 4 : 0);
    if (at + length == sizeof(b)) return true;
  }
  return false;
}

std::optional<uint32_t> NodeSource::TopOfStackLine(Process* process, const V8Frame& f,
                                                   const NamedFunction& named) {
  const std::optional<uint64_t>& top = walk_.top_of_stack;
  if (!top || walk_.frames.empty() || f.fp != walk_.frames[0].fp ||
      splicing_.leaf_tag != kBuiltinTag || !process->image->layout.CodeKnown()) {
    return std::nullopt;
  }
  // Code read before is looked up first; anything else only where a call
  // returns (the word may be any value the builtin pushed).
  if (CodeHolding(process, *top) == process->code.end() && !AfterCall(*process->memory, *top))
    return std::nullopt;
  std::optional<uint32_t> line = CompiledLine(process, f, named, *top);
  if (line && *line != 0) ++top_lines_;
  return line;
}

uint32_t NodeSource::BytecodeLine(Process* process, const V8Frame& f, const NamedFunction& named,
                                  int64_t offset, bool registers) {
  const V8Layout& l = process->image->layout;
  HeapReader heap(process->memory.get(), &l);
  if (named.scriptless) return ++no_line_.no_source, 0;
  if (!l.LineTableKnown() || named.lines == nullptr) return ++no_line_.no_table, 0;
  // Read once per array and function: its type (two reads of the target
  // each), its length and its position table.
  auto [it, fresh] = process->positions.try_emplace(std::pair{f.bytecode_array, f.shared});
  if (fresh) {
    Result<uint16_t> type = heap.TypeOf(f.bytecode_array);
    it->second.bytecode = type.ok() && *type == l.type_bytecode_array;
  }
  if (!it->second.bytecode) {
    // Not kept: an optimized frame's spill slot read as one is no key to
    // remember, nor is a read that failed once.
    process->positions.erase(it);
    ++(registers ? no_line_.innermost : no_line_.compiled);
    return 0;
  }
  if (fresh) {
    Result<uint64_t> bytecodes = heap.Word(f.bytecode_array, l.bytecode_length);
    if (bytecodes.ok() && heap.IsSmi(*bytecodes)) it->second.length = heap.SmiValue(*bytecodes);
    Result<uint64_t> table = heap.Word(f.bytecode_array, l.bytecode_positions);
    Result<uint64_t> length =
        table.ok() ? heap.Word(*table, l.byte_array_length) : Result<uint64_t>(table.status());
    const int64_t n = length.ok() && heap.IsSmi(*length) ? heap.SmiValue(*length) : -1;
    std::vector<uint8_t> bytes(n > 0 && n <= kMaxPositionTable ? size_t(n) : 0);
    if (!bytes.empty() && process->memory->Read(*table - uint64_t(l.heap_object_tag) +
                                                    uint64_t(l.byte_array_length) + 8,
                                                bytes.data(), bytes.size())) {
      Result<std::vector<PositionEntry>> entries =
          DecodePositionTable(bytes, l.positions_flags_in_code_delta);
      if (entries.ok()) {
        it->second.positions = std::move(*entries);
      } else {
        Problem("JavaScript position tables not read", entries.status().message());
      }
    }
  }
  if (registers) {
    // r9 proved by the array only: within its bytecodes.
    if (offset < 0 || offset >= it->second.length) return ++no_line_.innermost, 0;
    ++running_lines_;
  }
  std::optional<int64_t> position = PositionAt(it->second.positions, offset);
  if (!position) return ++no_line_.no_table, 0;
  return LineAt(named, *position);
}

uint32_t NodeSource::LineAt(const NamedFunction& named, int64_t position, bool count) {
  const uint32_t line = named.lines->LineOf(position);
  if (named.start >= 0 && line < named.lines->LineOf(named.start)) {
    Problem("JavaScript lines before their function's start",
            named.name + " line " + std::to_string(line));
    return count ? ++no_line_.no_table, 0 : 0;
  }
  if (named.map == nullptr) return line;
  // Where the source map places it, in the source its function is in.
  std::optional<OriginalPlace> o = named.map->Find(line - 1, named.lines->ColumnOf(position));
  if (!o || o->source != named.source) return count ? ++no_line_.unmapped, 0 : 0;
  ++mapped_lines_;
  return o->line + 1;
}

void NodeSource::Name(Process* process, const V8Frame& f, bool innermost, capture::FrameId code,
                      FrameInterner* interner, std::vector<capture::FrameId>* out) {
  const NamedFunction& named = Function(process, f);
  if (!named.error.empty()) {
    out->push_back(Unknown(named.error, interner));
    return;
  }
  ++js_frames_;
  // Anonymous code keeps the address it runs at (a return address but at
  // the leaf).
  const uint64_t pc = code != kNoCodeFrame ? interner->frame(code).address : 0;
  inlined_.clear();
  const uint32_t line = Line(process, f, named, innermost, pc);
  // What its optimized code inlined there, as --cpu-prof shows it: a frame
  // of each function, innermost first, at its own line.
  for (size_t i = 0; i + 1 < inlined_.size(); ++i) NameInlined(process, inlined_[i], interner, out);
  out->push_back(Interned(named, line, interner));
}

void NodeSource::NameInlined(Process* process, const InlinedAt& at, FrameInterner* interner,
                             std::vector<capture::FrameId>* out) {
  if (at.function == nullptr || at.function->shared == 0) {
    ++inlined_not_named_;
    return;
  }
  V8Frame f{};
  f.shared = at.function->shared;
  f.name = at.function->name;
  f.script = at.function->script;
  const NamedFunction& named = Function(process, f);
  if (!named.error.empty()) {
    ++inlined_not_named_;
    return;
  }
  const uint32_t line = !named.scriptless && named.lines != nullptr && at.position >= 0
                            ? LineAt(named, at.position, /*count=*/false)
                            : 0;
  ++inlined_frames_;
  if (line != 0) ++inlined_lines_;
  out->push_back(Interned(named, line, interner));
}

capture::FrameId NodeSource::Interned(const NamedFunction& named, uint32_t line,
                                      FrameInterner* interner) {
  // A mapped function's file is the source the map places it in.
  const std::string& file = named.map != nullptr ? named.map->source(named.source) : named.script;
  return interner->Interpreted({named.name, file, line, named.first_line});
}

void NodeSource::Splice(const SpliceStack& stack, FrameInterner* interner) {
  if (stack.walk.empty()) return;  // a thread that ran no JavaScript then
  auto p = processes_.find(stack.pid);
  if (p == processes_.end() || p->second.image == nullptr) return;
  if (Status parsed = ParseV8Walk(stack.walk, &walk_); !parsed.ok()) {
    Problem("malformed V8 walks", parsed.message());
    return;
  }
  const V8Walk* walk = &walk_;
  if (walk->pid != stack.pid || walk->tid != stack.tid) {
    Problem("V8 walks of another thread", "walk of " + std::to_string(walk->tid) +
                                              " paired with a sample of " +
                                              std::to_string(stack.tid));
    return;
  }
  ++walks_;
  if (walk->status == MICROSCOPE_V8_TRUNCATED) ++walks_cut_;
  if (walk->isolate != 0 && stack.label != nullptr) {
    auto& isolates = p->second.isolates;
    auto it = isolates.find(walk->isolate);
    if (it == isolates.end() && isolates.size() < kMaxIsolates)
      it = isolates.emplace(walk->isolate, std::to_string(isolates.size() + 1)).first;
    if (it != isolates.end()) {
      *stack.label = {capture::kV8IsolateLabel, it->second};
      ++walks_labeled_;
    } else {
      Problem("V8 isolates not numbered (too many in one process)",
              std::to_string(kMaxIsolates) + " numbered");
    }
  }
  const uint64_t unknown_before = unknown_frames_;
  const size_t leaf = record::FirstUserFrame(stack.sps);
  splicing_ = {&p->second, interner, leaf < stack.tags.size() ? stack.tags[leaf] : uint8_t(0)};
  SpliceV8Walk(*walk, stack.frames, stack.tags, stack.sps, {kBuiltinTag, kHandlerTag}, hooks_,
               &scratch_);
  ++stacks_;
  if (unknown_frames_ == unknown_before) ++stacks_named_;
}

void NodeSource::Finish(record::RowSink* sink, capture::Settings* settings) {
  if (sampler_ != nullptr) NameThreads(sink, UINT64_MAX);  // every record was processed
  for (auto& [pid, process] : processes_) {
    for (auto& [key, named] : process.functions) SourceNotRead(&named);
  }
  problems_.Report(sink);
  if (marks_only_) return;  // --node off: the settings say nothing of a walker
  const std::string state = !refused_.empty()     ? "off: " + refused_
                            : sampler_ == nullptr ? "off: no V8 image was mapped"
                                                  : "on";
  capture::SourceSetting& s = settings->SetSource(std::string(kSourceName), state);
  s.values = {{"stacks", stacks_},
              {"stacks_all_named", stacks_named_},
              {"walks", walks_},
              {"frame_bound", std::min<uint64_t>(walk_frames_, MICROSCOPE_V8_MAX_FRAMES)},
              {"walks_cut", walks_cut_},
              {"walks_isolate_labeled", walks_labeled_},
              {"function_copies", snapshots_kept_},
              {"functions_named_from_copies", named_from_snapshots_},
              {"frames", js_frames_},
              {"unknown_frames", unknown_frames_},
              {"frames_with_line_from_registers", running_lines_},
              {"frames_without_line_innermost", no_line_.innermost},
              {"frames_without_line_compiled", no_line_.compiled},
              {"frames_with_line_from_code", compiled_lines_},
              {"frames_with_line_from_baseline_code", baseline_lines_},
              {"frames_without_line_code", no_line_.code},
              {"code_objects_read", code_read_},
              {"frames_with_line_from_top_of_stack", top_lines_},
              {"sources_read_at_a_later_sample", sources_read_late_},
              {"inlined_frames", inlined_frames_},
              {"inlined_frames_with_line", inlined_lines_},
              {"inlined_functions_not_named", inlined_not_named_},
              {"code_not_found", code_missing_},
              {"frames_without_line_other", no_line_.no_table},
              {"frames_without_line_no_source", no_line_.no_source},
              {"source_maps_read", maps_read_},
              {"functions_placed_by_source_maps", functions_mapped_},
              {"lines_placed_by_source_maps", mapped_lines_},
              {"frames_without_line_unmapped", no_line_.unmapped},
              {"threads_named", threads_named_},
              {"thread_names_given", thread_names_given_},
              {"thread_names_refused", thread_names_refused_},
              {"thread_names_lost", sampler_ ? sampler_->Count("v8_thread_names_lost") : 0},
              {"walks_lost", sampler_ ? sampler_->Lost() : 0}};
  for (std::string& n : notes_) settings->notes.push_back(std::move(n));
  if (sampler_ != nullptr) {
    settings->notes.push_back(
        "Node (" + mode_ +
        "): JavaScript frames walked by BPF (frame pointers) at each sample of processes that "
        "map a V8 image, at most " +
        std::to_string(std::min<uint32_t>(walk_frames_, MICROSCOPE_V8_MAX_FRAMES)) +
        " per stack; " + std::to_string(walks_cut_) + " of " + std::to_string(walks_) +
        " walks cut there (--runtime-frames). Lines of interpreted frames from the frame "
        "when it called out (V8 writes the bytecode offset then), from the interpreter's "
        "registers (r9, proved by r12 holding the frame's bytecode array) when its bytecode "
        "handler ran at the sample (" +
        std::to_string(running_lines_) +
        "); of optimized frames (Maglev, TurboFan) from their code's source positions at the "
        "address they run (" +
        std::to_string(compiled_lines_) + ", " + std::to_string(code_read_) +
        " code objects read; " + std::to_string(no_line_.code) +
        " whose code had no position there or was another function's; no code found at " +
        std::to_string(code_missing_) + " addresses" +
        (code_error_.empty() ? std::string() : ", e.g. " + code_error_) +
        ", lined as other frames"
        "); innermost frames where neither held (" +
        std::to_string(no_line_.innermost) +
        "); baseline frames (Sparkplug) from the bytecode their code runs at that address (" +
        std::to_string(baseline_lines_) + "), but where that was not found (" +
        std::to_string(no_line_.compiled) +
        ") have the function but no line, as do builtins called as functions, which have no "
        "script (" +
        std::to_string(no_line_.no_source) +
        "). Functions optimized code inlined are frames of their own, innermost first, each at "
        "its own line (" +
        std::to_string(inlined_frames_) + " frames; " + std::to_string(inlined_not_named_) +
        " inlined calls left out, their function not read). Each walked sample is labeled "
        "v8.isolate with the number "
        "of its thread's isolate in its process (read from V8's thread-local current isolate)");
  }
  sampler_.reset();
}

// Whether the launched program, or the attached process, is a V8 image:
// then the walker starts at once, before its first sample.
bool LooksLikeNode(const record::SourceContext& context) {
  const std::string path = ProgramPath(context);
  return !path.empty() && V8LayoutFromElfFile(path).status().code() != StatusCode::kNotFound;
}

Result<std::unique_ptr<record::EventSource>> StartNodeSource(const record::SourceContext& context) {
  const std::string_view mode = context.options.RuntimeMode(kSourceName);
  auto source = std::make_unique<NodeSource>(context);
  if (mode == "off") return std::unique_ptr<record::EventSource>(std::move(source));
  const bool node = LooksLikeNode(context);
  if (mode == "bpf" || node) {
    if (Status started = source->Start(); !started.ok()) {
      if (mode == "bpf") return started;
      source->Refuse(started);
    } else if (node) {
      source->AddImage(ProgramPath(context));  // the launched program is laid out at its exec
    }
    context.settings->SetSource(std::string(kSourceName), "on");
  }
  return std::unique_ptr<record::EventSource>(std::move(source));
}

// node_walk.bpf.h's: layouts, images, and the functions sent once.
constexpr std::string_view kMaps[] = {"v8_processes", "v8_images", "v8_seen", "v8_snaps"};

// A V8 image the walker reads has its layout (v8dbg_ symbols) and its
// builtins' symbols (the interpreter's frames are found by them).
std::optional<std::pair<std::string, Status>> Inspect(const std::string& path) {
  Result<V8Layout> layout = V8LayoutFromElfFile(path);
  if (!layout.ok() && layout.status().code() == StatusCode::kNotFound) return std::nullopt;
  if (!layout.ok()) return std::pair(std::string("V8"), layout.status());
  Result<BuiltinsRanges> builtins = BuiltinsCode(path);
  if (!builtins.ok()) return std::pair(std::string("V8"), builtins.status());
  return std::pair(std::string("V8"), OkStatus());
}

}  // namespace

const Runtime kRuntime = {kSourceName,
                          "JavaScript frames",
                          "JavaScript frames, walked by BPF at each sample of every process that "
                          "maps a V8 image (v8dbg_ symbols: Node.js) and spliced into its native "
                          "stacks",
                          kMaps,
                          StartNodeSource,
                          /*marks_when_off=*/true,
                          Inspect};

}  // namespace microscope::runtimes::node
