#include "src/runtimes/python/layout.h"

#include <gelf.h>

#include <cstring>
#include <vector>

#include "base/hex.h"
#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::runtimes::python {
namespace {

constexpr char kCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};

struct Field {
  uint16_t index;  // of the offset, in 64-bit words from the struct's start
  uint16_t size;   // of its struct's size
};
struct Shape {
  int minor;
  uint16_t words;  // words the reader needs
  Field fields[33];
};
constexpr Shape kShapes[] = {
#include "src/runtimes/python/debug_offsets_fields.inc"
};

// In the order of the generated table's fields.
uint64_t Layout::*const kTargets[] = {
    &Layout::runtime_interpreters_head,
    &Layout::interp_next,
    &Layout::interp_threads_head,
    &Layout::interp_gil_holder,
    &Layout::interp_gil_locked,
    &Layout::thread_next,
    &Layout::thread_interp,
    &Layout::thread_current_frame,
    &Layout::thread_id,
    &Layout::thread_native_id,
    &Layout::frame_previous,
    &Layout::frame_executable,
    &Layout::frame_instr_ptr,
    &Layout::frame_owner,
    &Layout::code_filename,
    &Layout::code_name,
    &Layout::code_qualname,
    &Layout::code_linetable,
    &Layout::code_firstlineno,
    &Layout::code_adaptive,
    &Layout::object_type,
    &Layout::bytes_size,
    &Layout::bytes_data,
    &Layout::str_state,
    &Layout::str_length,
    &Layout::str_ascii_data,
    &Layout::interp_modules,
    &Layout::type_name,
    &Layout::type_flags,
    &Layout::dict_keys,
    &Layout::dict_values,
    &Layout::long_tag,
    &Layout::long_digits,
};
static_assert(std::size(kTargets) == std::size(Shape{}.fields), "one target per field");

uint64_t Word(std::span<const uint8_t> bytes, size_t index) {
  uint64_t v;
  std::memcpy(&v, bytes.data() + index * 8, 8);
  return v;
}

}  // namespace

std::string Layout::Version() const {
  return std::to_string(hex_version >> 24) + "." + std::to_string((hex_version >> 16) & 0xff) +
         "." + std::to_string((hex_version >> 8) & 0xff);
}

std::pair<uint8_t, uint8_t> NonPythonOwners(int minor) {
  // enum _frameowner in Include/internal/pycore_frame.h (pycore_interpframe_structs.h
  // from 3.14): 3.11 marks entry frames with is_entry instead.
  if (minor <= 11) return {0xff, 0xff};
  if (minor <= 13) return {3, 0xff};  // FRAME_OWNED_BY_CSTACK
  return {4, 3};                      // FRAME_OWNED_BY_CSTACK, FRAME_OWNED_BY_INTERPRETER
}

std::string KnownReleases() {
  std::string out = "3.11, 3.12";
  for (const Shape& s : kShapes) out += ", 3." + std::to_string(s.minor);
  return out;
}

Result<Layout> LayoutFromDebugOffsets(std::span<const uint8_t> runtime) {
  if (runtime.size() < 16 || std::memcmp(runtime.data(), kCookie, 8) != 0) {
    return Status::Error(
        StatusCode::kNotFound,
        "no CPython debug offsets at _PyRuntime (cookie \"xdebugpy\" at offset 0)");
  }
  Layout l;
  l.hex_version = Word(runtime, 1);
  l.minor = int((l.hex_version >> 16) & 0xff);
  const Shape* shape = nullptr;
  for (const Shape& s : kShapes) {
    if ((l.hex_version >> 24) == 3 && s.minor == l.minor) shape = &s;
  }
  if (shape == nullptr) {
    return Status::Error(StatusCode::kUnavailable,
                         "CPython " + l.Version() + " (debug offsets version " +
                             HexAddress(l.hex_version) +
                             ") is not a release this recorder reads (" + KnownReleases() + ")");
  }
  if (runtime.size() < size_t(shape->words) * 8) {
    return Status::Error(StatusCode::kDataLoss,
                         "CPython " + l.Version() +
                             " debug offsets: " + std::to_string(runtime.size()) + " bytes, need " +
                             std::to_string(shape->words * 8));
  }
  for (size_t i = 0; i < std::size(kTargets); ++i) {
    const Field& f = shape->fields[i];
    uint64_t offset = Word(runtime, f.index);
    uint64_t size = Word(runtime, f.size);
    // An offset outside its own struct means the shape is not this file's.
    if (offset >= size || size > (1u << 20)) {
      return Status::Error(StatusCode::kDataLoss,
                           "CPython " + l.Version() + " debug offsets: word " +
                               std::to_string(f.index) + " = " + std::to_string(offset) +
                               " is not inside its struct (size " + std::to_string(size) + ")");
    }
    l.*kTargets[i] = offset;
    if (kTargets[i] == &Layout::type_flags) l.type_size = size;
  }
  // PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8.
  l.str_compact_data = l.str_ascii_data + 16;
  return l;
}

Result<Layout> Layout311(uint64_t hex_version) {
  if ((hex_version >> 16) != 0x030b) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "version " + HexAddress(hex_version) + " is not CPython 3.11");
  }
  // Include/internal/pycore_runtime.h, pycore_interp.h, cpython/pystate.h,
  // pycore_frame.h, cpython/code.h and cpython/unicodeobject.h at 3.11, as
  // read live from Debian's 3.11.2 and pyenv's 3.11.7, and checked by
  // e2e python_runtimes against the running interpreter.
  Layout l;
  l.hex_version = hex_version;
  l.minor = 11;
  l.runtime_interpreters_head = 40;
  l.runtime_gil_holder = 576;  // gilstate.tstate_current
  l.interp_next = 0;
  l.interp_threads_head = 16;
  l.interp_gil_holder = Layout::kAbsent;
  l.interp_gil_locked = Layout::kAbsent;
  l.thread_next = 8;
  l.thread_interp = 16;
  l.thread_cframe = 56;
  l.cframe_current_frame = 8;
  l.thread_current_frame = Layout::kAbsent;
  l.thread_id = 152;
  l.thread_native_id = 160;
  l.frame_executable = 32;  // f_code
  l.frame_previous = 48;
  l.frame_instr_ptr = 56;  // prev_instr
  l.instr_is_previous = true;
  l.frame_is_entry = 68;
  l.frame_owner = 69;
  l.code_firstlineno = 72;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_linetable = 136;
  l.code_adaptive = 184;
  l.object_type = 8;
  l.bytes_size = 16;
  l.bytes_data = 32;
  l.str_length = 16;
  l.str_state = 32;
  l.str_ascii_data = 48;
  l.str_compact_data = 72;  // utf8_length, utf8 and wstr_length follow
  // Thread names: PyInterpreterState.modules (sys.modules), PyTypeObject's
  // tp_name, tp_flags and size (no tp_watched yet), PyDictObject's ma_keys
  // and ma_values, PyLongObject's ob_size and ob_digit; an instance's values
  // pointer 4 words before it (_PyObject_ValuesPointer), its dict 3.
  l.interp_modules = 888;
  l.type_name = 24;
  l.type_flags = 168;
  l.type_size = 408;
  l.dict_keys = 32;
  l.dict_values = 40;
  l.dict_values_header = 0;
  l.long_tag = 16;
  l.long_signed_size = true;
  l.long_digits = 24;
  l.values_before = 32;
  return l;
}

Result<Layout> Layout312(uint64_t hex_version) {
  if ((hex_version >> 16) != 0x030c) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "version " + HexAddress(hex_version) + " is not CPython 3.12");
  }
  // offsetof() over Include/ of CPython 3.12.5 (cpython/pystate.h,
  // internal/pycore_runtime.h, pycore_interp.h, pycore_frame.h,
  // cpython/code.h, cpython/unicodeobject.h) compiled for x86-64 Linux;
  // the same in 3.12.0's headers. 3.12 keeps the current frame behind the
  // thread's _PyCFrame and prev_instr (the last instruction run), as 3.11,
  // but marks the bottom of each eval loop activation with a shim frame
  // owned by the C stack, as 3.13.
  Layout l;
  l.hex_version = hex_version;
  l.minor = 12;
  l.runtime_interpreters_head = 40;
  l.interp_next = 0;
  l.interp_threads_head = 72;
  l.interp_gil_holder = Layout::kAbsent;
  l.interp_gil_locked = Layout::kAbsent;
  l.interp_ceval_gil = 384;  // ceval.gil
  l.gil_last_holder = 8;     // _gil_runtime_state.last_holder
  l.gil_locked = 16;         // _gil_runtime_state.locked
  l.thread_next = 8;
  l.thread_interp = 16;
  l.thread_cframe = 56;
  l.cframe_current_frame = 0;
  l.thread_current_frame = Layout::kAbsent;
  l.thread_id = 136;
  l.thread_native_id = 144;
  l.frame_executable = 0;  // f_code
  l.frame_previous = 8;
  l.frame_instr_ptr = 56;  // prev_instr
  l.instr_is_previous = true;
  l.frame_owner = 70;
  l.code_firstlineno = 68;
  l.code_filename = 112;
  l.code_name = 120;
  l.code_qualname = 128;
  l.code_linetable = 136;
  l.code_adaptive = 192;
  l.object_type = 8;
  l.bytes_size = 16;
  l.bytes_data = 32;
  l.str_length = 16;
  l.str_state = 32;
  l.str_ascii_data = 40;    // PyASCIIObject lost wstr in 3.12
  l.str_compact_data = 56;  // utf8_length, utf8
  return l;
}

Result<Layout> LayoutFromElfFile(const std::string& path) {
  ASSIGN_OR_RETURN(symbols::ElfFile file, symbols::OpenElfFile(path));
  Elf* elf = file.elf.get();
  // The .PyRuntime section, else the _PyRuntime symbol.
  std::span<const uint8_t> runtime;
  GElf_Shdr sh;
  GElf_Sym sym;
  if (Elf_Scn* scn = symbols::SectionByName(elf, ".PyRuntime", &sh)) {
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data != nullptr && data->d_buf != nullptr)
      runtime = std::span(static_cast<const uint8_t*>(data->d_buf), data->d_size);
  }
  // Before 3.11 _PyRuntime starts zeroed, in .bss: a CPython all the same.
  const bool symbol = symbols::FindSymbol(elf, "_PyRuntime", &sym);
  if (runtime.empty() && symbol) runtime = symbols::SymbolFileBytes(elf, sym);
  if (runtime.empty() && !symbol) {
    return Status::Error(StatusCode::kNotFound,
                         path + ": no _PyRuntime (not a CPython interpreter)");
  }
  Result<Layout> layout =
      runtime.empty() ? Result<Layout>(Status::Error(StatusCode::kNotFound, "no debug offsets"))
                      : LayoutFromDebugOffsets(runtime);
  if (layout.ok()) return layout;
  if (layout.status().code() != StatusCode::kNotFound) return layout.status().WithContext(path);
  // No debug offsets (before 3.13): the release from Py_Version.
  std::span<const uint8_t> version;
  if (symbols::FindSymbol(elf, "Py_Version", &sym)) version = symbols::SymbolFileBytes(elf, sym);
  if (version.size() < 8) {
    // _PyRuntime without Py_Version: a CPython before 3.11, which this
    // reader has no layout of; refused by name, not taken for no CPython.
    return Status::Error(StatusCode::kUnavailable,
                         path +
                             ": a CPython before 3.11 (no debug offsets, no Py_Version): "
                             "releases read here: " +
                             KnownReleases());
  }
  uint64_t hex;
  std::memcpy(&hex, version.data(), 8);
  if ((hex >> 16) == 0x030b) return Layout311(hex);
  if ((hex >> 16) == 0x030c) return Layout312(hex);
  Layout unknown;
  unknown.hex_version = hex;
  return Status::Error(StatusCode::kUnavailable,
                       path + ": CPython " + unknown.Version() +
                           " publishes no debug offsets and has no table here (" + KnownReleases() +
                           ")");
}

}  // namespace microscope::runtimes::python
