#include "src/symbols/symbolizer.h"

#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <unordered_map>

#include "base/hex.h"
#include "base/scoped_fd.h"
#include "capture/stack_interner.h"
#include "capture/string_table.h"
#include "src/symbols/elf_image.h"
#include "src/symbols/kallsyms.h"
#include "src/symbols/line_table.h"

namespace microscope::symbols {
namespace {

using capture::FrameId;
using capture::FrameKind;
using capture::FunctionId;
using capture::kNone;
using capture::ModuleId;
using capture::ModuleKind;

// libdebuginfod, opened on first use as libdw itself does: linking it would
// load libcurl and its TLS stack into every command's start-up.
struct Debuginfod {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  std::string error;
};

const Debuginfod& LoadDebuginfod() {
  static const Debuginfod lib = [] {
    Debuginfod d;
    void* h = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      d.error = std::string("libdebuginfod not available: ") + dlerror();
      return d;
    }
    d.begin = reinterpret_cast<decltype(d.begin)>(dlsym(h, "debuginfod_begin"));
    d.find_debuginfo =
        reinterpret_cast<decltype(d.find_debuginfo)>(dlsym(h, "debuginfod_find_debuginfo"));
    d.end = reinterpret_cast<decltype(d.end)>(dlsym(h, "debuginfod_end"));
    if (d.begin == nullptr || d.find_debuginfo == nullptr || d.end == nullptr) {
      d.begin = nullptr;
      d.error = "libdebuginfod.so.1 lacks debuginfod_begin/find_debuginfo/end";
    }
    return d;
  }();
  return lib;
}

// Owners of what libdebuginfod hands out: its client, and the cache path
// it strdups for each file found.
struct DebuginfodClientDeleter {
  void operator()(debuginfod_client* client) const { LoadDebuginfod().end(client); }
};
using DebuginfodClient = std::unique_ptr<debuginfod_client, DebuginfodClientDeleter>;
struct FreeDeleter {
  void operator()(char* p) const { free(p); }
};

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Join(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return r + (path.starts_with("/") ? "" : "/") + path;
}

// Files under a debug directory, by their own build ID: for debug files
// that are not in a .build-id tree. Built on first use; reads only ELF notes.
class DirectoryIndex {
 public:
  explicit DirectoryIndex(std::string dir) : dir_(std::move(dir)) {}
  const std::vector<std::string>& Find(const std::string& build_id) {
    if (!built_) Build();
    static const std::vector<std::string> kEmpty;
    auto it = by_id_.find(build_id);
    return it == by_id_.end() ? kEmpty : it->second;
  }

 private:
  void Build() {
    built_ = true;
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir_, fs::directory_options::skip_permission_denied, ec),
        end;
    size_t seen = 0;
    for (; !ec && it != end && seen < 200000; it.increment(ec), ++seen) {
      if (it.depth() > 16) {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec)) continue;
      std::string path = it->path().string();
      if (path.find("/.build-id/") != std::string::npos) continue;  // looked up directly
      auto id = ReadBuildId(path);
      if (id.ok() && !id->empty()) by_id_[HexBytes(*id)].push_back(path);
    }
  }
  std::string dir_;
  bool built_ = false;
  std::unordered_map<std::string, std::vector<std::string>> by_id_;
};

// What was found for one module.
struct ModuleFiles {
  std::unique_ptr<ElfImage> image;  // symbols (perhaps from a debug file)
  // PT_LOAD segments from a file that has its code (a debug file's have no
  // file offsets): used when the capture recorded none.
  std::vector<LoadSegment> layout;
  std::unique_ptr<LineTable> lines;
  std::optional<SymbolTable> kernel;  // kallsyms
  const char* reason = kNoFile;       // why frames stay unnamed when nothing is usable
};

// Finds each module's files. Not copyable: it owns the debuginfod client
// and refers to the caller's options.
class Resolver {
 public:
  explicit Resolver(const SymbolizeOptions& options)
      : options_(options), urls_(DebuginfodUrlsValue(options.debuginfod_urls)) {
    for (const std::string& dir : options.debug_dirs) indexes_.emplace_back(dir);
  }
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  ModuleFiles Resolve(const capture::Module& mod, const std::string& path, ModuleSummary* sum);
  std::string recorded_boot_id_;

 private:
  // Tries one candidate; true when it proved to be the module's file.
  bool Try(const std::string& candidate, const std::string& where, ModuleFiles* files,
           ModuleSummary* sum, bool* mismatch);
  void TryDebuginfod(ModuleFiles* files, ModuleSummary* sum, bool* mismatch);

  const SymbolizeOptions& options_;
  std::vector<DirectoryIndex> indexes_;
  const std::string urls_;  // $DEBUGINFOD_URLS's value for the servers to ask
  DebuginfodClient client_;
  std::vector<uint8_t> build_id_;
  std::string hex_;
  std::string original_;  // the module's own file under the sysroot, when it matched
};

bool Resolver::Try(const std::string& candidate, const std::string& where, ModuleFiles* files,
                   ModuleSummary* sum, bool* mismatch) {
  if (!IsRegularFile(candidate)) {
    sum->looked.push_back(where + " " + candidate + ": not there");
    return false;
  }
  auto id = ReadBuildId(candidate);
  if (!id.ok()) {
    sum->looked.push_back(where + " " + candidate + ": " + id.status().message());
    return false;
  }
  if (*id != build_id_) {
    *mismatch = true;
    sum->looked.push_back(where + " " + candidate + ": build ID mismatch (file has " +
                          (id->empty() ? std::string("none") : HexBytes(*id)) + ")");
    return false;
  }
  std::string found = where + " " + candidate + ": build ID matches";
  bool used = false;
  auto image = LoadElfImage(candidate, /*find_debug_file=*/false);
  if (!image.ok()) {
    sum->problems.push_back(candidate + ": " + image.status().message());
  } else {
    // The segments of a file that holds its code (a debug file's have no
    // file offsets), from the image just read rather than a second open.
    const std::vector<LoadSegment>& loads = (*image)->loads;
    bool has_code = !loads.empty() &&
                    std::none_of(loads.begin(), loads.end(),
                                 [](const LoadSegment& l) { return l.filesz == 0 && l.memsz > 0; });
    if (files->layout.empty() && has_code) files->layout = loads;
    const std::string& source = (*image)->symbol_source;
    bool better = files->image == nullptr ||
                  (source == ".symtab" && files->image->symbol_source != ".symtab") ||
                  (files->image->symbols.size() == 0 && (*image)->symbols.size() > 0);
    if (better && (*image)->symbols.size() > 0) {
      found += ", symbols from " + source + " (" + std::to_string((*image)->symbols.size()) + ")";
      (*image)->symbol_source = candidate + " " + source;
      files->image = std::move(image).value();
      used = true;
    } else if (files->image == nullptr) {
      files->image = std::move(image).value();  // segments at least
    }
  }
  if (files->lines == nullptr) {
    auto lines = OpenLineTable(candidate, hex_, options_.cache_dir);
    if (lines.ok()) {
      found += ", DWARF lines (" + std::to_string((*lines)->line_rows()) + " rows, " +
               std::to_string((*lines)->scopes()) + " functions and inlined calls" +
               ((*lines)->from_cache ? ", decoded tables from the cache)" : ")");
      files->lines = std::move(lines).value();
      used = true;
    } else if (lines.status().code() != StatusCode::kNotFound) {
      // A file that claims DWARF but cannot be read: say so, keep going.
      // (kNotFound: a file without DWARF lines, such as a stripped binary.)
      sum->problems.push_back(candidate + ": " + lines.status().message());
      found += ", DWARF unreadable";
    }
  }
  sum->looked.push_back(found);
  if (used) sum->used.push_back(candidate);
  return true;
}

void Resolver::TryDebuginfod(ModuleFiles* files, ModuleSummary* sum, bool* mismatch) {
  if (urls_.empty()) return;
  const std::string where = "debuginfod " + urls_;
  // The servers come from the environment (see SymbolizeOptions); asking
  // with any other value would ask servers nobody named.
  const char* env = getenv(DEBUGINFOD_URLS_ENV_VAR);
  if (env == nullptr || urls_ != env) {
    sum->looked.push_back(where + ": not asked: $" DEBUGINFOD_URLS_ENV_VAR " is " +
                          (env == nullptr ? std::string("unset") : "'" + std::string(env) + "'") +
                          ", not these servers");
    return;
  }
  const Debuginfod& lib = LoadDebuginfod();
  if (lib.begin == nullptr) {
    sum->looked.push_back(where + ": " + lib.error);
    return;
  }
  if (client_ == nullptr) {
    client_.reset(lib.begin());
    if (client_ == nullptr) {
      sum->looked.push_back(where + ": client could not start");
      return;
    }
  }
  char* raw_path = nullptr;
  int found = lib.find_debuginfo(client_.get(), build_id_.data(), int(build_id_.size()), &raw_path);
  std::unique_ptr<char, FreeDeleter> path(raw_path);
  if (found < 0) {
    sum->looked.push_back(where + ": " + strerror(-found));
    return;
  }
  ScopedFd fd(found);  // the file is read again by path, as every candidate is
  Try(path != nullptr ? path.get() : "", where + " ->", files, sum, mismatch);
}

ModuleFiles Resolver::Resolve(const capture::Module& mod, const std::string& path,
                              ModuleSummary* sum) {
  ModuleFiles files;
  build_id_ = mod.build_id;
  hex_ = HexBytes(mod.build_id);
  if (mod.kind == ModuleKind::kAnonymous) {
    files.reason = kAnonymous;
    return files;
  }
  if (mod.kind == ModuleKind::kKernel) {
    std::vector<uint8_t> host = KernelBuildId();
    if (host != mod.build_id || (host.empty() && !options_.this_host)) {
      sum->looked.push_back("/proc/kallsyms: this host's kernel has build ID " +
                            (host.empty() ? std::string("unknown") : HexBytes(host)));
      files.reason = host.empty() ? kNoBuildId : kMismatch;
      return files;
    }
    // KASLR places the kernel anew at each boot: its addresses name the
    // same functions only within the boot that recorded them.
    if (!options_.this_host && (recorded_boot_id_.empty() || recorded_boot_id_ != BootId())) {
      sum->looked.push_back(
          "/proc/kallsyms: same kernel build, but recorded in another boot (" +
          (recorded_boot_id_.empty() ? std::string("unknown") : recorded_boot_id_) +
          "); KASLR moved its addresses");
      files.reason = kOtherBoot;
      return files;
    }
    auto table = LoadKallsyms();
    if (!table.ok()) {
      sum->looked.push_back("/proc/kallsyms: " + table.status().message());
      files.reason = kNoSymbols;
      return files;
    }
    sum->looked.push_back("/proc/kallsyms: this host's kernel, build ID matches");
    sum->used.push_back("/proc/kallsyms");
    files.kernel = std::move(table).value();
    return files;
  }
  bool mismatch = false;
  bool complete = false;
  auto done = [&] {
    return files.image != nullptr && files.image->symbol_source.ends_with(".symtab") &&
           files.lines != nullptr;
  };
  if (mod.kind == ModuleKind::kVdso) {
    auto own = OwnVdsoImage();
    auto image = own.empty() ? Result<std::unique_ptr<ElfImage>>(Status::Error("no vDSO"))
                             : LoadElfImageFromMemory(own);
    if (image.ok() && (*image)->build_id == mod.build_id && !mod.build_id.empty()) {
      sum->looked.push_back("this process's vDSO: build ID matches");
      sum->used.push_back("[vdso]");
      files.image = std::move(image).value();
      files.layout = files.image->loads;
      complete = true;  // the vDSO has no DWARF to find
    } else {
      sum->looked.push_back(
          "this process's vDSO: " +
          (image.ok() ? "build ID " + HexBytes((*image)->build_id) : image.status().message()));
      mismatch = image.ok();
    }
  }
  if (mod.build_id.empty()) {
    // Nothing can be proven without a build ID; at record time the file is
    // the one that was mapped a moment ago.
    if (options_.this_host && path.starts_with("/")) {
      build_id_.clear();
      Try(path, "no build ID recorded; this host's", &files, sum, &mismatch);
    }
    if (files.image == nullptr) files.reason = kNoBuildId;
    return files;
  }
  std::string sub = hex_.substr(0, 2) + "/" + hex_.substr(2);
  std::vector<std::pair<std::string, std::string>> candidates;
  for (size_t i = 0; i < options_.debug_dirs.size(); ++i) {
    const std::string& dir = options_.debug_dirs[i];
    candidates.push_back({"debug dir", dir + "/.build-id/" + sub + ".debug"});
    // perf's build-ID cache keeps a directory per ID holding "debug" and "elf".
    candidates.push_back({"debug dir", dir + "/.build-id/" + sub + "/debug"});
    candidates.push_back({"debug dir", dir + "/.build-id/" + sub + "/elf"});
    candidates.push_back({"debug dir", dir + "/.build-id/" + sub});
    for (const std::string& p : indexes_[i].Find(hex_)) candidates.push_back({"debug dir", p});
  }
  const std::string& root = options_.sysroot;
  candidates.push_back({"sysroot", Join(root, "/usr/lib/debug/.build-id/" + sub + ".debug")});
  std::string original = path.starts_with("/") ? Join(root, path) : "";
  for (auto& [where, candidate] : candidates) {
    if (complete || done()) break;
    // Missing .build-id variants are not worth a line each; the first is.
    bool variant = where == "debug dir" && !candidate.ends_with(".debug") &&
                   candidate.find("/.build-id/") != std::string::npos;
    if (variant && !IsRegularFile(candidate)) continue;
    Try(candidate, where, &files, sum, &mismatch);
  }
  bool original_matches = false;
  if (!original.empty() && !complete) {
    if (!done()) {
      original_matches =
          Try(original, root.empty() || root == "/" ? "original path" : "original path in sysroot",
              &files, sum, &mismatch);
    } else if (IsRegularFile(original)) {
      auto id = ReadBuildId(original);
      original_matches = id.ok() && *id == mod.build_id;
    }
  }
  if (!complete && !done()) TryDebuginfod(&files, sum, &mismatch);
  // Symbols from a debug file lack the PLT stubs (.plt has no bytes there):
  // take them from the binary when it is the module's.
  if (original_matches && files.image != nullptr &&
      !files.image->symbol_source.starts_with(original + " ")) {
    (void)AddPltSymbolsOf(original, files.image.get());
  }
  if (files.image == nullptr || (files.image->symbols.size() == 0 && files.lines == nullptr)) {
    files.reason = files.image != nullptr ? kNoSymbols : mismatch ? kMismatch : kNoFile;
  }
  return files;
}

// The information a frame has: used to change frames only when they gain.
struct FrameInfo {
  std::string function;  // raw name
  std::string file;
  uint32_t line = 0;
  std::vector<SourceFrame> inlined;  // innermost first
};

class Namer {
 public:
  explicit Namer(capture::Capture* c) : c_(c), strings_(&c->strings) {
    for (FunctionId i = 0; i < c->functions.size(); ++i) {
      functions_.emplace(std::make_pair(c->functions[i].module, c->strings[c->functions[i].name]),
                         i);
    }
  }
  FunctionId Function(ModuleId module, const std::string& raw) {
    // Most frames of a module share their functions: demangle each raw
    // name once.
    auto [cached, fresh] = by_raw_.try_emplace(std::make_pair(module, raw), kNone);
    if (!fresh) return cached->second;
    cached->second = Intern(module, raw);
    return cached->second;
  }
  capture::StringId String(std::string_view s) { return s.empty() ? kNone : strings_.Intern(s); }

 private:
  struct PairHash {
    size_t operator()(const std::pair<ModuleId, std::string>& p) const {
      return std::hash<std::string>()(p.second) * 31 + p.first;
    }
  };
  FunctionId Intern(ModuleId module, const std::string& raw) {
    std::string name = Demangle(raw);
    auto key = std::make_pair(module, name);
    auto it = functions_.find(key);
    if (it != functions_.end()) {
      capture::Function& f = c_->functions[it->second];
      if (f.raw_name == kNone && raw != name) f.raw_name = strings_.Intern(raw);
      return it->second;
    }
    capture::Function f;
    f.name = strings_.Intern(name);
    f.module = module;
    if (raw != name) f.raw_name = strings_.Intern(raw);
    c_->functions.push_back(f);
    FunctionId id = FunctionId(c_->functions.size() - 1);
    functions_.emplace(std::move(key), id);
    return id;
  }

  capture::Capture* c_;
  capture::StringTable strings_;
  std::map<std::pair<ModuleId, std::string>, FunctionId> functions_;
  std::unordered_map<std::pair<ModuleId, std::string>, FunctionId, PairHash> by_raw_;
};

// Rebuilds the stack tree so that each replaced frame is followed (toward
// the callee) by its inlined calls, outermost first, dropping the inline
// frames an earlier symbolization had put there.
uint64_t RebuildStacks(capture::Capture* c, const std::vector<char>& replaced,
                       const std::vector<std::vector<FrameId>>& inlined) {
  capture::Stacks old = std::move(c->stacks);
  c->stacks = {};
  capture::StackInterner stacks(&c->stacks);
  std::vector<uint32_t> depth;
  auto intern = [&](capture::StackId parent, FrameId frame) {
    capture::StackId node = stacks.Intern(parent, frame);
    if (node == depth.size()) depth.push_back(parent == kNone ? 1 : depth[parent] + 1);
    return node;
  };
  // How many old frames hang below each node at most (parents come first):
  // inlined calls go in only where the stacks through them stay within the
  // depth readers accept.
  std::vector<uint32_t> height(old.size(), 0);
  for (size_t n = old.size(); n-- > 0;) {
    if (old.parent[n] != kNone)
      height[old.parent[n]] = std::max(height[old.parent[n]], height[n] + 1);
  }
  std::vector<capture::StackId> remap(old.size());
  std::vector<char> drop_inline_below(old.size(), 0);
  uint64_t dropped = 0;
  for (size_t n = 0; n < old.size(); ++n) {
    capture::StackId parent = old.parent[n] == kNone ? kNone : remap[old.parent[n]];
    FrameId f = old.frame[n];
    if (c->frames[f].kind == FrameKind::kInline && old.parent[n] != kNone &&
        drop_inline_below[old.parent[n]]) {
      remap[n] = parent;
      drop_inline_below[n] = 1;
      continue;
    }
    capture::StackId node = intern(parent, f);
    if (f < replaced.size() && replaced[f]) {
      drop_inline_below[n] = 1;
      const auto& chain = inlined[f];
      for (size_t k = chain.size(); k-- > 0;) {
        if (depth[node] + 1 + height[n] > capture::kMaxStackDepth) {
          ++dropped;
          break;
        }
        node = intern(node, chain[k]);
      }
    }
    remap[n] = node;
  }
  // Every table that holds stacks follows the new tree.
  capture::ForEachStackColumn(*c, [&](const char*, auto& column) {
    for (size_t i = 0; i < column.size(); ++i) {
      if (column[i] != kNone) column[i] = remap[column[i]];
    }
  });
  return dropped;
}

void CountProblem(capture::Capture* c, Namer* namer, const std::string& kind,
                  const std::string& example) {
  capture::StringId k = namer->String(kind);
  for (capture::Problem& p : c->problems) {
    if (p.kind == k) {
      ++p.count;
      return;
    }
  }
  c->problems.push_back({k, 1, namer->String(example)});
}

std::vector<capture::Segment> ToSegments(const std::vector<LoadSegment>& loads) {
  std::vector<capture::Segment> out;
  for (const LoadSegment& l : loads) out.push_back({l.offset, l.vaddr, l.filesz});
  return out;
}

}  // namespace

std::string DebuginfodUrlsValue(const std::vector<std::string>& urls) {
  std::string value;
  for (const std::string& u : urls) value += (value.empty() ? "" : " ") + u;
  return value;
}

void AddModuleLayouts(capture::Capture* capture) {
  for (capture::Module& mod : capture->modules) {
    if (!mod.segments.empty()) continue;
    if (mod.kind == ModuleKind::kVdso) {
      auto own = OwnVdsoImage();
      if (own.empty()) continue;
      auto image = LoadElfImageFromMemory(own);
      if (image.ok() && (*image)->build_id == mod.build_id)
        mod.segments = ToSegments((*image)->loads);
      continue;
    }
    if (mod.kind != ModuleKind::kFile || mod.path >= capture->strings.size()) continue;
    auto layout = ReadElfLayout(capture->strings[mod.path]);
    if (!layout.ok() || (!mod.build_id.empty() && layout->build_id != mod.build_id)) continue;
    mod.segments = ToSegments(layout->loads);
    if (mod.segments.size() > 256) mod.segments.clear();  // what readers accept
  }
}

Result<SymbolizeSummary> Symbolize(capture::Capture* capture, const SymbolizeOptions& options) {
  capture::Capture& c = *capture;
  std::vector<std::vector<FrameId>> by_module(c.modules.size());
  for (FrameId f = 0; f < c.frames.size(); ++f) {
    const capture::Frame& frame = c.frames[f];
    if (frame.module == kNone || frame.module >= c.modules.size()) continue;
    if (frame.kind == FrameKind::kNative || frame.kind == FrameKind::kKernel) {
      by_module[frame.module].push_back(f);
    }
  }
  // Which frames already have inlined calls below them.
  std::vector<char> had_inlines(c.frames.size(), 0);
  for (size_t n = 0; n < c.stacks.size(); ++n) {
    if (c.frames[c.stacks.frame[n]].kind != FrameKind::kInline) continue;
    capture::StackId p = c.stacks.parent[n];
    while (p != kNone && c.frames[c.stacks.frame[p]].kind == FrameKind::kInline) {
      p = c.stacks.parent[p];
    }
    if (p != kNone) had_inlines[c.stacks.frame[p]] = 1;
  }

  Namer namer(capture);
  Resolver resolver(options);
  resolver.recorded_boot_id_ = c.settings.boot_id;
  SymbolizeSummary summary;
  std::vector<char> replaced(c.frames.size(), 0);
  std::vector<std::vector<FrameId>> inlined(c.frames.size());
  std::vector<SourceFrame> source;
  for (ModuleId m = 0; m < c.modules.size(); ++m) {
    if (by_module[m].empty()) continue;
    const capture::Module mod = c.modules[m];
    ModuleSummary sum;
    sum.module = m;
    sum.path = mod.path < c.strings.size() ? c.strings[mod.path] : "";
    sum.build_id = HexBytes(mod.build_id);
    ModuleFiles files = resolver.Resolve(mod, sum.path, &sum);
    // The recorded segments when there are some: a debug file's have no
    // file offsets.
    std::vector<LoadSegment> segments;
    for (const capture::Segment& s : mod.segments)
      segments.push_back({s.offset, s.vaddr, s.size, s.size});
    for (const std::string& p : sum.problems) {
      CountProblem(&c, &namer, "debug file unusable (symbolize)", p);
    }
    for (FrameId f : by_module[m]) {
      const capture::Frame old = c.frames[f];
      FrameInfo info;
      uint64_t vaddr = old.address;
      bool mapped = true;
      if (files.kernel) {
        info.function = std::string(files.kernel->Lookup(old.address));
      } else if (!segments.empty()) {
        mapped = OffsetToVaddr(segments, old.address, &vaddr);
        if (mapped && files.image != nullptr) {
          info.function = std::string(files.image->symbols.Lookup(vaddr));
        }
      } else if (files.image != nullptr) {
        mapped = !files.layout.empty() && OffsetToVaddr(files.layout, old.address, &vaddr);
        if (mapped) info.function = std::string(files.image->symbols.Lookup(vaddr));
      }
      if (mapped && files.lines != nullptr) {
        files.lines->Lookup(vaddr, &source);
        if (!source.empty()) {
          const SourceFrame& outer = source.back();
          // The DWARF names the function holding the code, as addr2line,
          // eu-addr2line and pprof do: __GI_abort rather than its alias
          // abort, msort_with_tmp for its .part.0 piece. The symbol table
          // names code the DWARF does not cover.
          if (outer.function != kNoName) info.function = files.lines->String(outer.function);
          info.file = files.lines->String(outer.file);
          info.line = outer.line;
          info.inlined.assign(source.begin(), source.end() - 1);
        }
      }
      bool had_name = old.function != kNone;
      bool gains = (!info.function.empty() && !had_name) || (info.line != 0 && old.line == 0) ||
                   (!info.inlined.empty() && !had_inlines[f]) ||
                   (!info.function.empty() && had_name && old.line == 0 && info.line != 0);
      if (gains && !info.function.empty()) {
        capture::Frame& frame = c.frames[f];
        frame.function = namer.Function(m, info.function);
        if (info.line != 0) {
          frame.file = namer.String(info.file);
          frame.line = info.line;
        }
        if (had_inlines[f] || !info.inlined.empty()) {
          replaced[f] = 1;
          for (const SourceFrame& s : info.inlined) {
            capture::Frame in;
            in.kind = FrameKind::kInline;
            in.module = m;
            in.address = old.address;
            std::string name(files.lines->String(s.function));
            in.function = namer.Function(m, name.empty() ? "?" : name);
            in.file = namer.String(files.lines->String(s.file));
            in.line = s.line;
            c.frames.push_back(in);
            inlined[f].push_back(FrameId(c.frames.size() - 1));
          }
          sum.inline_frames += info.inlined.size();
        }
        ++summary.changed;
        if (!had_name) ++sum.newly_named;
      }
      const capture::Frame& now = c.frames[f];
      ++sum.frames;
      if (now.function != kNone) {
        ++sum.named;
      } else {
        const char* why = files.image == nullptr && !files.kernel           ? files.reason
                          : files.kernel || files.image->symbols.size() > 0 ? kOutsideSymbols
                                                                            : kNoSymbols;
        ++sum.unnamed[why];
      }
      if (now.line != 0) ++sum.with_lines;
    }
    if (sum.unnamed.count(kNoFile) || sum.unnamed.count(kMismatch)) {
      CountProblem(&c, &namer,
                   sum.unnamed.count(kMismatch) ? "build ID mismatch, frames unnamed"
                                                : "module file not found, frames unnamed",
                   sum.path + " (build ID " + sum.build_id + ")");
    }
    summary.frames += sum.frames;
    summary.named += sum.named;
    summary.modules.push_back(std::move(sum));
  }
  replaced.resize(c.frames.size(), 0);
  inlined.resize(c.frames.size());
  if (std::find(replaced.begin(), replaced.end(), 1) != replaced.end()) {
    uint64_t dropped = RebuildStacks(&c, replaced, inlined);
    if (dropped > 0) {
      CountProblem(&c, &namer, "inline frames left out of stacks near the depth limit",
                   std::to_string(dropped) + " chains");
    }
  }
  return summary;
}

}  // namespace microscope::symbols
