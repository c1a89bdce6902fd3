#include "src/runtimes/python/code_reader.h"

#include <gelf.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "base/hex.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::runtimes::python {
namespace {

constexpr uint64_t kMaxName = 4096;          // characters of a file or function name
constexpr uint64_t kMaxLineTable = 1 << 20;  // bytes of a line table

}  // namespace

Status Unreadable(const char* what, uint64_t address) {
  return Status::Error(StatusCode::kUnavailable,
                       std::string(what) + " at " + HexAddress(address) + " is not readable");
}

Status CheckType(ProcessMemory& memory, const Layout& layout, uint64_t object, uint64_t want,
                 const char* what) {
  uint64_t type;
  if (!ReadValue(memory, object + layout.object_type, &type)) return Unreadable(what, object);
  if (type != want) {
    return Status::Error(StatusCode::kDataLoss, std::string(what) + " at " + HexAddress(object) +
                                                    " has type " + HexAddress(type) + ", not " +
                                                    HexAddress(want));
  }
  return OkStatus();
}

Result<std::string> ReadStr(ProcessMemory& memory, const Layout& layout,
                            const InterpreterAddresses& types, uint64_t str, const char* what) {
  // Its type, length and state in one read.
  const uint64_t header =
      std::max({layout.object_type + 8, layout.str_state + 4, layout.str_length + 8});
  uint8_t bytes[64];
  if (header > sizeof(bytes)) return Unreadable(what, str);
  if (!memory.Read(str, bytes, header)) return Unreadable(what, str);
  uint64_t type;
  uint32_t state;
  int64_t length;
  std::memcpy(&type, bytes + layout.object_type, 8);
  std::memcpy(&state, bytes + layout.str_state, 4);
  std::memcpy(&length, bytes + layout.str_length, 8);
  if (type != types.str) {
    return Status::Error(StatusCode::kDataLoss, std::string(what) + " at " + HexAddress(str) +
                                                    " has type " + HexAddress(type) + ", not " +
                                                    HexAddress(types.str));
  }
  // PyASCIIObject.state: interned (2 bits), kind (3), compact, ascii.
  const unsigned kind = (state >> 2) & 7;
  const bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) {
    return Status::Error(StatusCode::kDataLoss, std::string(what) + " at " + HexAddress(str) +
                                                    " is not a compact string (state " +
                                                    HexAddress(state) + ")");
  }
  if (length < 0 || uint64_t(length) > kMaxName) {
    return Status::Error(StatusCode::kDataLoss, std::string(what) + " at " + HexAddress(str) +
                                                    " claims " + std::to_string(length) +
                                                    " characters");
  }
  std::vector<uint8_t> raw(size_t(length) * kind);
  uint64_t data = str + (ascii ? layout.str_ascii_data : layout.str_compact_data);
  if (!raw.empty() && !memory.Read(data, raw.data(), raw.size())) return Unreadable(what, str);
  if (ascii) return std::string(raw.begin(), raw.end());
  // Latin-1, UCS-2 or UCS-4 code points, to UTF-8.
  std::string out;
  for (size_t i = 0; i < size_t(length); ++i) {
    uint32_t c = 0;
    std::memcpy(&c, raw.data() + i * kind, kind);
    record::AppendUtf8(c, &out);
  }
  return out;
}

namespace {

Result<std::vector<uint8_t>> ReadLineTable(ProcessMemory& memory, const Layout& layout,
                                           const InterpreterAddresses& types, uint64_t table) {
  RETURN_IF_ERROR(CheckType(memory, layout, table, types.bytes, "co_linetable"));
  int64_t size;
  if (!ReadValue(memory, table + layout.bytes_size, &size))
    return Unreadable("co_linetable", table);
  if (size < 0 || uint64_t(size) > kMaxLineTable) {
    return Status::Error(StatusCode::kDataLoss, "co_linetable at " + HexAddress(table) +
                                                    " claims " + std::to_string(size) + " bytes");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && !memory.Read(table + layout.bytes_data, bytes.data(), bytes.size())) {
    return Unreadable("co_linetable", table);
  }
  return bytes;
}

}  // namespace

Result<InterpreterAddresses> InterpreterAddressesFromElf(const std::string& path, uint64_t bias) {
  ASSIGN_OR_RETURN(symbols::ElfFile file, symbols::OpenElfFile(path));
  InterpreterAddresses t;
  Elf* elf = file.elf.get();
  GElf_Sym sym;
  for (auto [name, field] : {std::pair{"_PyRuntime", &InterpreterAddresses::runtime},
                             std::pair{"PyCode_Type", &InterpreterAddresses::code},
                             std::pair{"PyUnicode_Type", &InterpreterAddresses::str},
                             std::pair{"PyBytes_Type", &InterpreterAddresses::bytes}}) {
    if (symbols::FindSymbol(elf, name, &sym)) t.*field = sym.st_value + bias;
  }
  for (auto [name, field] : {std::pair{"PyDict_Type", &InterpreterAddresses::dict},
                             std::pair{"PyLong_Type", &InterpreterAddresses::long_},
                             std::pair{"PyModule_Type", &InterpreterAddresses::module}}) {
    if (symbols::FindSymbol(elf, name, &sym)) t.*field = sym.st_value + bias;
  }
  if (t.runtime == 0 || t.code == 0 || t.str == 0 || t.bytes == 0) {
    return Status::Error(StatusCode::kNotFound, path +
                                                    ": no _PyRuntime, PyCode_Type, PyUnicode_Type "
                                                    "or PyBytes_Type symbol");
  }
  return t;
}

Result<std::vector<PythonThread>> ListThreads(ProcessMemory& memory, const Layout& layout,
                                              const InterpreterAddresses& at, size_t max_threads) {
  std::vector<PythonThread> threads;
  uint64_t interp;
  if (!ReadValue(memory, at.runtime + layout.runtime_interpreters_head, &interp)) {
    return Unreadable("_PyRuntime", at.runtime);
  }
  // Both lists are bounded: a cycle in target memory ends at the bound.
  for (int interpreters = 0; interp != 0 && interpreters < 64; ++interpreters) {
    uint64_t state;
    if (!ReadValue(memory, interp + layout.interp_threads_head, &state)) {
      return Unreadable("interpreter state", interp);
    }
    while (state != 0) {
      if (threads.size() == max_threads) {
        return Status::Error(StatusCode::kDataLoss,
                             "more than " + std::to_string(max_threads) + " Python threads");
      }
      PythonThread t{.state = state};
      if (!ReadValue(memory, state + layout.thread_native_id, &t.native_id) ||
          !ReadValue(memory, state + layout.thread_id, &t.ident) ||
          !ReadValue(memory, state + layout.thread_next, &state)) {
        return Unreadable("thread state", t.state);
      }
      threads.push_back(t);
    }
    if (!ReadValue(memory, interp + layout.interp_next, &interp)) {
      return Unreadable("interpreter state", interp);
    }
  }
  return threads;
}

Result<std::vector<FrameCode>> ReadFrameCodes(ProcessMemory& memory, const Layout& layout,
                                              uint64_t tstate, size_t max_frames) {
  uint64_t frame = 0;
  if (layout.thread_current_frame != Layout::kAbsent) {
    if (!ReadValue(memory, tstate + layout.thread_current_frame, &frame))
      return Unreadable("thread state", tstate);
  } else {
    uint64_t cframe = 0;
    if (!ReadValue(memory, tstate + layout.thread_cframe, &cframe))
      return Unreadable("thread state", tstate);
    if (cframe != 0 && !ReadValue(memory, cframe + layout.cframe_current_frame, &frame))
      return Unreadable("_PyCFrame", cframe);
  }
  const auto [shim, base] = NonPythonOwners(layout.minor);
  std::vector<FrameCode> out;
  // Bounded: a cycle in target memory ends at the bound.
  for (size_t steps = 0; frame != 0 && out.size() < max_frames && steps < 2 * max_frames; ++steps) {
    uint64_t executable, previous;
    uint8_t owner = 0;
    if (!ReadValue(memory, frame + layout.frame_executable, &executable) ||
        !ReadValue(memory, frame + layout.frame_previous, &previous) ||
        !ReadValue(memory, frame + layout.frame_owner, &owner)) {
      return Unreadable("interpreter frame", frame);
    }
    frame = previous;
    if (owner == shim || owner == base) continue;
    FrameCode f;
    f.code = executable & ~uint64_t(7);  // 3.14 on: a tagged stack reference
    if (!ReadValue(memory, f.code + layout.code_qualname, &f.qualname) ||
        !ReadValue(memory, f.code + layout.code_filename, &f.filename) ||
        !ReadValue(memory, f.code + layout.code_firstlineno, &f.first_line)) {
      continue;  // not code: the walk will say so
    }
    out.push_back(f);
  }
  return out;
}

Result<CodeInfo> ReadCode(ProcessMemory& memory, const Layout& layout,
                          const InterpreterAddresses& types, uint64_t code) {
  RETURN_IF_ERROR(CheckType(memory, layout, code, types.code, "code object"));
  uint64_t filename, qualname, table;
  int32_t first_line;
  if (!ReadValue(memory, code + layout.code_filename, &filename) ||
      !ReadValue(memory, code + layout.code_qualname, &qualname) ||
      !ReadValue(memory, code + layout.code_linetable, &table) ||
      !ReadValue(memory, code + layout.code_firstlineno, &first_line)) {
    return Unreadable("code object", code);
  }
  CodeInfo info;
  info.first_line = first_line;
  info.filename_object = filename;
  info.qualname_object = qualname;
  ASSIGN_OR_RETURN(info.filename, ReadStr(memory, layout, types, filename, "co_filename"));
  ASSIGN_OR_RETURN(info.qualname, ReadStr(memory, layout, types, qualname, "co_qualname"));
  Result<std::vector<uint8_t>> bytes = ReadLineTable(memory, layout, types, table);
  if (!bytes.ok()) {
    // Named without lines: a code object gone since the walk copied its
    // first bytes, whose line table was longer than the copy.
    if (bytes.status().code() != StatusCode::kUnavailable) return bytes.status();
    info.lines_error = bytes.status().message();
    return info;
  }
  info.lines = LineTable::Decode(*bytes, info.first_line);
  info.line_table_bytes = bytes->size();
  return info;
}

}  // namespace microscope::runtimes::python
