#include <elfutils/libdw.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "base/hex.h"
#include "src/doctor/doctor.h"
#include "src/record/proc.h"
#include "src/runtimes/runtime.h"
#include "src/symbols/debuginfod.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::doctor {
namespace {

constexpr size_t kMaxModules = 256;

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// PROG as execvp finds it.
std::string FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (IsFile(candidate) && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// A script's interpreter ("#!/usr/bin/env python3" -> python3's path).
std::string ScriptInterpreter(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line) || line.rfind("#!", 0) != 0) return "";
  std::string rest = line.substr(2);
  rest.erase(0, rest.find_first_not_of(" \t"));
  std::string first = rest.substr(0, rest.find_first_of(" \t"));
  if (first.size() >= 4 && first.substr(first.size() - 4) == "/env") {
    std::string arg = rest.substr(first.size());
    arg.erase(0, arg.find_first_not_of(" \t"));
    arg = arg.substr(0, arg.find_first_of(" \t"));
    return FindProgram(arg);
  }
  return first;
}

// The directories the loader searches after a library's own run paths.
std::vector<std::string> LibraryDirs() {
  std::vector<std::string> dirs;
  std::ifstream conf_list;
  for (const char* conf :
       {"/etc/ld.so.conf.d/x86_64-linux-gnu.conf", "/etc/ld.so.conf.d/libc.conf"}) {
    std::ifstream in(conf);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] == '/') dirs.push_back(line);
    }
  }
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                        "/usr/lib64", "/lib", "/usr/lib"}) {
    dirs.push_back(d);
  }
  return dirs;
}

struct Dynamic {
  std::string interp;
  std::vector<std::string> needed;
  std::vector<std::string> runpath;
};

Dynamic ReadDynamic(const std::string& path) {
  Dynamic out;
  Result<symbols::ElfFile> file = symbols::OpenElfFile(path);
  if (!file.ok()) return out;
  Elf* elf = file->elf.get();
  size_t phnum = 0;
  elf_getphdrnum(elf, &phnum);
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, int(i), &ph) == nullptr || ph.p_type != PT_INTERP) continue;
    size_t size = 0;
    const char* raw = elf_rawfile(elf, &size);
    if (raw != nullptr && ph.p_offset < size && ph.p_filesz <= size - ph.p_offset) {
      out.interp = std::string(raw + ph.p_offset, strnlen(raw + ph.p_offset, ph.p_filesz));
    }
  }
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_DYNAMIC) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr || sh.sh_entsize == 0) continue;
    const size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n && out.needed.size() < kMaxModules; ++i) {
      GElf_Dyn dyn;
      if (gelf_getdyn(data, int(i), &dyn) == nullptr) break;
      if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH && dyn.d_tag != DT_RPATH) continue;
      const char* s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
      if (s == nullptr) continue;
      if (dyn.d_tag == DT_NEEDED) {
        out.needed.emplace_back(s);
      } else {
        std::string list = s;
        size_t start = 0;
        while (start <= list.size()) {
          size_t end = list.find(':', start);
          if (end == std::string::npos) end = list.size();
          std::string dir = list.substr(start, end - start);
          const std::string origin = path.substr(0, path.rfind('/'));
          for (const char* token : {"$ORIGIN", "${ORIGIN}"}) {
            size_t at = dir.find(token);
            if (at != std::string::npos) dir.replace(at, strlen(token), origin);
          }
          if (!dir.empty()) out.runpath.push_back(dir);
          start = end + 1;
        }
      }
    }
  }
  return out;
}

// The program, its interpreter and the libraries it needs (breadth first,
// as the loader finds them), at most kMaxModules.
std::vector<std::string> ProgramModules(const std::string& program, std::vector<Check>* notes) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::deque<std::string> queue = {program};
  const std::vector<std::string> dirs = LibraryDirs();
  while (!queue.empty() && out.size() < kMaxModules) {
    std::string path = queue.front();
    queue.pop_front();
    char real[PATH_MAX];
    std::string key = realpath(path.c_str(), real) != nullptr ? real : path;
    if (!seen.insert(key).second) continue;
    out.push_back(path);
    Dynamic dyn = ReadDynamic(path);
    if (!dyn.interp.empty()) queue.push_back(dyn.interp);
    for (const std::string& lib : dyn.needed) {
      std::string found;
      std::vector<std::string> search = dyn.runpath;
      search.insert(search.end(), dirs.begin(), dirs.end());
      for (const std::string& dir : search) {
        if (IsFile(dir + "/" + lib)) {
          found = dir + "/" + lib;
          break;
        }
      }
      if (found.empty()) {
        notes->push_back(
            {"library " + lib, Verdict::kWarn,
             "needed by " + path + ", not found in its run paths or the system's",
             "check LD_LIBRARY_PATH; doctor does not run the program to ask its loader"});
      } else {
        queue.push_back(found);
      }
    }
  }
  return out;
}

constexpr size_t kCfiProbes = 64;

struct ModuleFacts {
  bool elf = false;
  bool cfi = false;        // for most of its code
  size_t cfi_covered = 0;  // of kCfiProbes addresses in .text
  std::string cfi_section;
  bool symtab = false;
  bool debug_info = false;  // in the file
  std::vector<uint8_t> build_id;
};

ModuleFacts Facts(const std::string& path) {
  ModuleFacts f;
  Result<symbols::ElfFile> file = symbols::OpenElfFile(path);
  if (!file.ok()) return f;
  f.elf = true;
  Elf* elf = file->elf.get();
  GElf_Shdr sh;
  for (const char* name : {".eh_frame_hdr", ".eh_frame", ".debug_frame"}) {
    Elf_Scn* scn = symbols::SectionByName(elf, name, &sh);
    if (scn != nullptr && sh.sh_size > 0 && sh.sh_type != SHT_NOBITS) {
      f.cfi_section = name;
      break;
    }
  }
  // CFI that covers the code: an .eh_frame may hold the C runtime's start
  // files' entries and nothing of the program's own (-fno-asynchronous-
  // unwind-tables). Asked at kCfiProbes addresses across .text.
  GElf_Shdr text;
  Dwarf_CFI* cfi = dwarf_getcfi_elf(elf);
  if (!f.cfi_section.empty() && cfi != nullptr &&
      symbols::SectionByName(elf, ".text", &text) != nullptr && text.sh_size > 0) {
    for (size_t i = 0; i < kCfiProbes; ++i) {
      Dwarf_Frame* frame = nullptr;
      const uint64_t at = text.sh_addr + text.sh_size * (2 * i + 1) / (2 * kCfiProbes);
      if (dwarf_cfi_addrframe(cfi, at, &frame) == 0) {
        ++f.cfi_covered;
        free(frame);
      }
    }
    f.cfi = 2 * f.cfi_covered >= kCfiProbes;
  } else {
    f.cfi = !f.cfi_section.empty() && f.cfi_section == ".debug_frame";
  }
  if (cfi != nullptr) dwarf_cfi_end(cfi);
  Elf_Scn* symtab = symbols::SectionByName(elf, ".symtab", &sh);
  f.symtab = symtab != nullptr && sh.sh_size > 0;
  Elf_Scn* info = symbols::SectionByName(elf, ".debug_info", &sh);
  f.debug_info = info != nullptr && sh.sh_size > 0 && sh.sh_type != SHT_NOBITS;
  f.build_id = symbols::ElfBuildId(elf);
  return f;
}

// The debug file the usual places hold for a build ID ("" none).
std::string LocalDebugFile(const std::vector<uint8_t>& id) {
  if (id.size() < 2) return "";
  const std::string hex = HexBytes(id);
  std::string path =
      "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  return IsFile(path) ? path : "";
}

std::string Readlink(const std::string& path) {
  char buf[256];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf);
  return n > 0 ? std::string(buf, size_t(n)) : "";
}

}  // namespace

std::vector<Check> TargetChecks(const Target& target) {
  std::vector<Check> out;
  std::vector<std::string> modules;  // as the target names them
  std::vector<std::string> mapped;   // a process's: where each is read (map_files)
  if (target.pid != 0) {
    const std::string proc = "/proc/" + std::to_string(target.pid);
    std::vector<record::ExecutableMapping> maps = record::ExecutableMappings(target.pid);
    if (maps.empty()) {
      out.push_back({"target", Verdict::kFail,
                     "process " + std::to_string(target.pid) +
                         ": no such process, or its maps "
                         "are not readable to this user",
                     "give a running process's pid, as its user or root"});
      return out;
    }
    const std::string theirs = Readlink(proc + "/ns/mnt"), ours = Readlink("/proc/self/ns/mnt");
    Check ns{"mount namespace", Verdict::kPass, "", ""};
    if (theirs.empty()) {
      ns.verdict = Verdict::kWarn;
      ns.found = "not readable";
      ns.fix = "run as root or as the process's user";
    } else if (theirs == ours) {
      ns.found = "the same as microscope's";
    } else {
      ns.found = "another (" + theirs + ": a container): its files are read as mapped (" + proc +
                 "/map_files), its debug files looked for here";
    }
    out.push_back(ns);
    // Each file through /proc/PID/map_files: the very file mapped, never a
    // path the target could point elsewhere (a link in its root, a file
    // swapped since). Only root reads them.
    std::set<std::string> seen;
    for (const auto& m : maps) {
      if (m.path.empty() || m.path[0] != '/' || !seen.insert(m.path).second) continue;
      if (modules.size() >= kMaxModules) break;
      char link[64];
      snprintf(link, sizeof link, "/map_files/%llx-%llx", (unsigned long long)m.start,
               (unsigned long long)m.end);
      modules.push_back(m.path);
      mapped.push_back(proc + link);
    }
  } else {
    if (target.command.empty()) return out;
    std::string program = FindProgram(target.command[0]);
    if (program.empty() || !IsFile(program)) {
      out.push_back({"target", Verdict::kFail, target.command[0] + ": no such program",
                     "give the program's path, or a name found in $PATH"});
      return out;
    }
    std::string interp = ScriptInterpreter(program);
    if (!interp.empty()) {
      out.push_back({"script", Verdict::kPass, program + " runs " + interp, ""});
      program = interp;
    }
    modules = ProgramModules(program, &out);
  }
  std::vector<uint8_t> undebugged_id;
  size_t without_cfi = 0, without_debug = 0;
  for (size_t i = 0; i < modules.size(); ++i) {
    const std::string& name = modules[i];
    const std::string path = i < mapped.size() ? mapped[i] : name;
    ModuleFacts f = Facts(path);
    Check c{"module " + name, Verdict::kPass, "", ""};
    if (!f.elf) {
      c.verdict = Verdict::kWarn;
      c.found = "not readable as ELF";
      c.fix = "its frames cannot be unwound or named";
      out.push_back(c);
      continue;
    }
    std::string debug = f.debug_info ? "in the file" : LocalDebugFile(f.build_id);
    std::string cfi = f.cfi ? "CFI (" + f.cfi_section + ")"
                      : f.cfi_section.empty()
                          ? std::string("no CFI")
                          : "no CFI for most of its code (" + f.cfi_section + " covers " +
                                std::to_string(f.cfi_covered) + " of " +
                                std::to_string(kCfiProbes) + " addresses across .text)";
    c.found = cfi + "; " + (f.symtab ? "symbol table" : "no symbol table (exported names only)") +
              "; " + "debug info: " + (debug.empty() ? "none here" : debug) + "; build ID " +
              (f.build_id.empty() ? "none" : HexBytes(f.build_id));
    std::vector<std::string> fixes;
    if (!f.cfi) {
      c.verdict = Verdict::kWarn;
      ++without_cfi;
      fixes.push_back(
          "no CFI: its frames unwind only through frame pointers, and callers are lost where "
          "it omits them: rebuild with -fasynchronous-unwind-tables (the compilers' default) or "
          "-fno-omit-frame-pointer, and do not strip .eh_frame");
    }
    if (!f.symtab && debug.empty()) {
      c.verdict = Verdict::kWarn;
      fixes.push_back(
          "stripped: functions that are not exported show as module+0xoffset: install its debug "
          "symbols (Debian: its -dbgsym package), or set DEBUGINFOD_URLS (record names later "
          "with symbolize --debuginfod)");
    }
    if (debug.empty()) {
      ++without_debug;
      if (undebugged_id.empty()) undebugged_id = f.build_id;
    }
    for (size_t i = 0; i < fixes.size(); ++i) c.fix += (i ? "; " : "") + fixes[i];
    out.push_back(c);
    for (const runtimes::Runtime* r : runtimes::Registered()) {
      if (r->inspect == nullptr) continue;
      auto seen = r->inspect(path);
      if (!seen) continue;
      Check rc{std::string(r->name) + " " + name, Verdict::kPass, seen->first, ""};
      if (seen->second.ok()) {
        rc.found += ": " + std::string(r->frames) + " are walked";
      } else {
        rc.verdict = Verdict::kFail;
        rc.found = "refused: " + seen->second.message();
        rc.fix = std::string(r->frames) +
                 " will be missing, only the interpreter's own C functions shown: run a release "
                 "the walker reads";
      }
      out.push_back(rc);
    }
  }
  Check dbg{"debuginfod", Verdict::kPass, "", ""};
  const char* urls = getenv("DEBUGINFOD_URLS");
  if (urls == nullptr || *urls == '\0') {
    dbg.found = "not configured (DEBUGINFOD_URLS is empty)";
    if (without_debug > 0) {
      dbg.verdict = Verdict::kWarn;
      dbg.found += "; " + std::to_string(without_debug) + " of " + std::to_string(modules.size()) +
                   " modules have no debug info here";
      dbg.fix =
          "for source lines and inlined functions: install their debug packages, or set "
          "DEBUGINFOD_URLS (Debian: https://debuginfod.debian.net) and symbolize later";
    }
  } else if (undebugged_id.empty()) {
    dbg.found = std::string("configured (") + urls + "); every module has debug info here";
  } else {
    if (getenv("DEBUGINFOD_TIMEOUT") == nullptr) setenv("DEBUGINFOD_TIMEOUT", "5", 0);
    symbols::DebuginfodClient client(urls);
    Result<std::string> got = client.FindDebuginfo(undebugged_id);
    if (got.ok()) {
      dbg.found = std::string("configured (") + urls + "), answering: gave " + *got;
    } else {
      dbg.verdict = Verdict::kWarn;
      dbg.found = std::string("configured (") + urls + "); asked for build ID " +
                  HexBytes(undebugged_id) + ": " + got.status().message();
      dbg.fix = "check the servers in DEBUGINFOD_URLS answer (debuginfod-find debuginfo ID)";
    }
  }
  out.push_back(dbg);
  return out;
}

}  // namespace microscope::doctor
