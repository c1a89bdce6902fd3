#include "src/symbols/module_resolver.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "base/hex.h"
#include "src/symbols/kallsyms.h"

namespace microscope::symbols {
namespace {

using capture::ModuleKind;

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

ModuleFiles Unusable(const char* reason) {
  ModuleFiles files;
  files.reason = reason;
  return files;
}

}  // namespace

const std::vector<std::string>& DirectoryIndex::Find(const std::string& build_id) {
  if (!built_) Build();
  static const std::vector<std::string> kEmpty;
  auto it = by_id_.find(build_id);
  return it == by_id_.end() ? kEmpty : it->second;
}

void DirectoryIndex::Build() {
  built_ = true;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir_, fs::directory_options::skip_permission_denied, ec), end;
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

bool Resolver::Search::Done() const {
  return files.image != nullptr && files.image->symbol_source.ends_with(".symtab") &&
         files.lines != nullptr;
}

Resolver::Resolver(const SymbolizeOptions& options, std::string recorded_boot_id)
    : options_(options),
      recorded_boot_id_(std::move(recorded_boot_id)),
      debuginfod_(DebuginfodUrlsValue(options.debuginfod_urls)) {
  for (const std::string& dir : options.debug_dirs) indexes_.emplace_back(dir);
}

ModuleFiles Resolver::Resolve(const capture::Module& mod, const std::string& path,
                              ModuleSummary* sum) {
  build_id_ = mod.build_id;
  hex_ = HexBytes(mod.build_id);
  if (mod.kind == ModuleKind::kAnonymous) return Unusable(kAnonymous);
  if (mod.kind == ModuleKind::kKernel) return ResolveKernel(mod, sum);
  Search s{.sum = sum};
  if (mod.kind == ModuleKind::kVdso) TryOwnVdso(mod, &s);
  static const std::vector<std::string> kNone;
  const std::vector<std::string>& targets =
      sum->module < options_.target_paths.size() ? options_.target_paths[sum->module] : kNone;
  if (mod.build_id.empty()) return ResolveWithoutBuildId(path, targets, &s);
  std::string original = path.starts_with("/") ? Join(options_.sysroot, path) : "";
  for (auto& [where, candidate] : Candidates(path, targets)) {
    if (s.complete || s.Done()) break;
    // Missing .build-id variants are not worth a line each; the first is.
    bool variant = where == "debug dir" && !candidate.ends_with(".debug") &&
                   candidate.find("/.build-id/") != std::string::npos;
    if (variant && !IsRegularFile(candidate)) continue;
    Try(candidate, where, &s);
  }
  // The module's own binary: as the recording processes saw it (through
  // their roots) first, then at the recorded path here.
  std::vector<std::pair<std::string, std::string>> originals;
  for (const std::string& t : targets) originals.push_back({"target's root", t});
  if (!original.empty()) originals.push_back({"", original});
  bool original_matches = false;
  for (auto& [where, file] : originals) {
    if (s.complete) break;
    if (TryOriginal(file, where, &s)) {
      original = file;
      original_matches = true;
      break;
    }
  }
  if (!s.complete && !s.Done()) TryDebuginfod(&s);
  ModuleFiles& files = s.files;
  // Symbols from a debug file lack the PLT stubs (.plt has no bytes there):
  // take them from the binary when it is the module's.
  if (original_matches && files.image != nullptr &&
      !files.image->symbol_source.starts_with(original + " ")) {
    (void)AddPltSymbolsOf(original, files.image.get());
  }
  if (files.image == nullptr || (files.image->symbols.size() == 0 && files.lines == nullptr)) {
    files.reason = files.image != nullptr ? kNoSymbols : s.mismatch ? kMismatch : kNoFile;
  }
  return std::move(files);
}

ModuleFiles Resolver::ResolveKernel(const capture::Module& mod, ModuleSummary* sum) {
  std::vector<uint8_t> host = KernelBuildId();
  if (host != mod.build_id || (host.empty() && !options_.this_host)) {
    sum->looked.push_back("/proc/kallsyms: this host's kernel has build ID " +
                          (host.empty() ? std::string("unknown") : HexBytes(host)));
    return Unusable(host.empty() ? kNoBuildId : kMismatch);
  }
  // KASLR places the kernel anew at each boot: its addresses name the
  // same functions only within the boot that recorded them.
  if (!options_.this_host && (recorded_boot_id_.empty() || recorded_boot_id_ != BootId())) {
    sum->looked.push_back("/proc/kallsyms: same kernel build, but recorded in another boot (" +
                          (recorded_boot_id_.empty() ? std::string("unknown") : recorded_boot_id_) +
                          "); KASLR moved its addresses");
    return Unusable(kOtherBoot);
  }
  auto table = LoadKallsyms();
  if (!table.ok()) {
    sum->looked.push_back("/proc/kallsyms: " + table.status().message());
    return Unusable(kNoSymbols);
  }
  sum->looked.push_back("/proc/kallsyms: this host's kernel, build ID matches");
  sum->used.push_back("/proc/kallsyms");
  ModuleFiles files;
  files.kernel = std::move(table).value();
  return files;
}

void Resolver::TryOwnVdso(const capture::Module& mod, Search* s) {
  auto own = OwnVdsoImage();
  auto image = own.empty() ? Result<std::unique_ptr<ElfImage>>(Status::Error("no vDSO"))
                           : LoadElfImageFromMemory(own);
  if (image.ok() && (*image)->build_id == mod.build_id && !mod.build_id.empty()) {
    s->sum->looked.push_back("this process's vDSO: build ID matches");
    s->sum->used.push_back("[vdso]");
    s->files.image = std::move(image).value();
    s->files.layout = s->files.image->loads;
    s->complete = true;  // the vDSO has no DWARF to find
  } else {
    s->sum->looked.push_back(
        "this process's vDSO: " +
        (image.ok() ? "build ID " + HexBytes((*image)->build_id) : image.status().message()));
    s->mismatch = image.ok();
  }
}

ModuleFiles Resolver::ResolveWithoutBuildId(const std::string& path,
                                            const std::vector<std::string>& targets, Search* s) {
  // Nothing can be proven without a build ID; at record time the file is
  // the one that was mapped a moment ago, as its process saw it: never this
  // host's file at that path when the process sees another.
  if (options_.this_host) {
    for (const std::string& t : targets) {
      if (s->files.image == nullptr) Try(t, "no build ID recorded; the target's root:", s);
    }
    if (targets.empty() && path.starts_with("/")) {
      Try(path, "no build ID recorded; this host's", s);
    }
  }
  if (s->files.image == nullptr) s->files.reason = kNoBuildId;
  return std::move(s->files);
}

std::vector<std::pair<std::string, std::string>> Resolver::Candidates(
    const std::string& path, const std::vector<std::string>& targets) {
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
  candidates.push_back(
      {"sysroot", Join(options_.sysroot, "/usr/lib/debug/.build-id/" + sub + ".debug")});
  // A container ships its debug files in its own root, where its processes
  // see the module: ROOT/usr/lib/debug, ROOT being the target's path less
  // the recorded one.
  for (const std::string& t : targets) {
    if (t.size() <= path.size() || !t.ends_with(path)) continue;
    std::string root = t.substr(0, t.size() - path.size());
    candidates.push_back({"target's root", root + "/usr/lib/debug/.build-id/" + sub + ".debug"});
  }
  return candidates;
}

bool Resolver::TryOriginal(const std::string& original, const std::string& where, Search* s) {
  if (!s->Done()) {
    const std::string& root = options_.sysroot;
    if (!where.empty()) return Try(original, where, s);
    return Try(original, root.empty() || root == "/" ? "original path" : "original path in sysroot",
               s);
  }
  // Already complete: the binary is read only for its PLT stubs.
  if (!IsRegularFile(original)) return false;
  auto id = ReadBuildId(original);
  return id.ok() && *id == build_id_;
}

bool Resolver::Try(const std::string& candidate, const std::string& where, Search* s) {
  if (!IsRegularFile(candidate)) {
    s->sum->looked.push_back(where + " " + candidate + ": not there");
    return false;
  }
  auto id = ReadBuildId(candidate);
  if (!id.ok()) {
    s->sum->looked.push_back(where + " " + candidate + ": " + id.status().message());
    return false;
  }
  if (*id != build_id_) {
    s->mismatch = true;
    s->sum->looked.push_back(where + " " + candidate + ": build ID mismatch (file has " +
                             (id->empty() ? std::string("none") : HexBytes(*id)) + ")");
    return false;
  }
  std::string found = where + " " + candidate + ": build ID matches";
  bool used = TakeSymbols(candidate, s, &found);
  if (s->files.lines == nullptr) used = TakeLines(candidate, s, &found) || used;
  s->sum->looked.push_back(found);
  if (used) s->sum->used.push_back(candidate);
  return true;
}

// Keeps the candidate's symbols when they are better than those found so
// far; true when they are used.
bool Resolver::TakeSymbols(const std::string& candidate, Search* s, std::string* found) {
  auto image = LoadElfImage(candidate, /*find_debug_file=*/false);
  if (!image.ok()) {
    s->sum->problems.push_back(candidate + ": " + image.status().message());
    return false;
  }
  ModuleFiles& files = s->files;
  // The segments of a file that holds its code (a debug file's have no
  // file offsets), from the image just read rather than a second open.
  const std::vector<LoadSegment>& loads = (*image)->loads;
  bool has_code = !loads.empty() &&
                  std::none_of(loads.begin(), loads.end(),
                               [](const LoadSegment& l) { return l.filesz == 0 && l.memsz > 0; });
  if (files.layout.empty() && has_code) files.layout = loads;
  const std::string& source = (*image)->symbol_source;
  bool better = files.image == nullptr ||
                (source == ".symtab" && files.image->symbol_source != ".symtab") ||
                (files.image->symbols.size() == 0 && (*image)->symbols.size() > 0);
  if (better && (*image)->symbols.size() > 0) {
    *found += ", symbols from " + source + " (" + std::to_string((*image)->symbols.size()) + ")";
    (*image)->symbol_source = candidate + " " + source;
    files.image = std::move(image).value();
    return true;
  }
  if (files.image == nullptr) files.image = std::move(image).value();  // segments at least
  return false;
}

// Takes the candidate's DWARF lines; true when it has them.
bool Resolver::TakeLines(const std::string& candidate, Search* s, std::string* found) {
  auto lines = OpenLineTable(candidate, hex_, options_.cache_dir);
  if (lines.ok()) {
    *found += ", DWARF lines (" + std::to_string((*lines)->line_rows()) + " rows, " +
              std::to_string((*lines)->scopes()) + " functions and inlined calls" +
              ((*lines)->from_cache ? ", decoded tables from the cache)" : ")");
    s->files.lines = std::move(lines).value();
    return true;
  }
  if (lines.status().code() != StatusCode::kNotFound) {
    // A file that claims DWARF but cannot be read: say so, keep going.
    // (kNotFound: a file without DWARF lines, such as a stripped binary.)
    s->sum->problems.push_back(candidate + ": " + lines.status().message());
    *found += ", DWARF unreadable";
  }
  return false;
}

void Resolver::TryDebuginfod(Search* s) {
  if (debuginfod_.urls().empty()) return;
  const std::string where = "debuginfod " + debuginfod_.urls();
  auto path = debuginfod_.FindDebuginfo(build_id_);
  if (!path.ok()) {
    s->sum->looked.push_back(where + ": " + path.status().message());
    return;
  }
  Try(*path, where + " ->", s);
}

}  // namespace microscope::symbols
