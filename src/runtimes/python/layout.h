// Where a CPython release keeps what the Python walker reads: offsets into
// the runtime, interpreter, thread, frame, code, bytes and str objects.
// From 3.13 on, CPython publishes them at the start of _PyRuntime
// (_Py_DebugOffsets: the cookie "xdebugpy", its hex version, then groups of
// offsets each led by its struct's size), in the file's .PyRuntime section
// as in the live process; only the struct's shape differs between releases,
// and comes from CPython's own headers (debug_offsets_fields.inc). 3.11
// publishes no offsets: its layout is a table, checked against Debian's
// python3.11 and a shared-libpython 3.11, chosen by the file's Py_Version;
// 3.12's is a table from its headers.
// Nothing is guessed: a release without a shape or table is refused by name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "base/status.h"

namespace microscope::runtimes::python {

struct Layout {
  // An offset this release does not have (the 3.11-only ones below, or the
  // ones 3.11 reaches another way).
  static constexpr uint64_t kAbsent = ~0ull;
  uint64_t hex_version = 0;  // PY_VERSION_HEX, e.g. 0x030d05f0 for 3.13.5
  int minor = 0;
  uint64_t runtime_interpreters_head = 0;
  uint64_t interp_next = 0;
  uint64_t interp_threads_head = 0;
  uint64_t interp_gil_holder = 0;  // offset of the GIL holder's thread state
  uint64_t interp_gil_locked = 0;  // and of the GIL's `locked` (an int, 1: held)
  uint64_t thread_next = 0;
  uint64_t thread_interp = 0;
  uint64_t thread_current_frame = 0;
  uint64_t thread_id = 0;
  uint64_t thread_native_id = 0;
  uint64_t frame_previous = 0;
  uint64_t frame_executable = 0;
  uint64_t frame_instr_ptr = 0;
  uint64_t frame_owner = 0;
  uint64_t code_filename = 0;
  uint64_t code_name = 0;
  uint64_t code_qualname = 0;
  uint64_t code_linetable = 0;
  uint64_t code_firstlineno = 0;
  uint64_t code_adaptive = 0;  // the code's first instruction
  uint64_t object_type = 0;
  uint64_t bytes_size = 0;
  uint64_t bytes_data = 0;
  uint64_t str_state = 0;
  uint64_t str_length = 0;
  uint64_t str_ascii_data = 0;  // sizeof(PyASCIIObject): where ASCII text starts
  // sizeof(PyCompactUnicodeObject): where other compact text starts (its
  // 1-, 2- or 4-byte code points)
  uint64_t str_compact_data = 0;
  // 3.11 only: the thread's current frame is behind its _PyCFrame
  // (thread_current_frame is then kAbsent), an entry frame is flagged by
  // is_entry, frame_instr_ptr is prev_instr (the last instruction run, not
  // the next), and the GIL holder is in the runtime, not the interpreter.
  uint64_t thread_cframe = kAbsent;
  uint64_t cframe_current_frame = kAbsent;
  uint64_t frame_is_entry = kAbsent;
  bool instr_is_previous = false;
  uint64_t runtime_gil_holder = kAbsent;
  // 3.12 only: the interpreter's GIL is behind its ceval.gil pointer, with
  // last_holder and locked at these offsets in it.
  uint64_t interp_ceval_gil = kAbsent;
  uint64_t gil_last_holder = kAbsent;
  uint64_t gil_locked = kAbsent;
  // 3.11 and 3.13 on (absent in 3.12): what thread names are read by
  // (thread_names.h): the interpreter's sys.modules, a type's name, flags
  // and size (sizeof(PyTypeObject)), a dict's keys and values, an int's tag
  // and digits.
  uint64_t interp_modules = kAbsent;
  uint64_t type_name = kAbsent;
  uint64_t type_flags = kAbsent;
  uint64_t type_size = kAbsent;
  uint64_t dict_keys = kAbsent;
  uint64_t dict_values = kAbsent;
  uint64_t long_tag = kAbsent;
  uint64_t long_digits = kAbsent;
  // Where a split dict's values start in its values (after 3.13's header
  // of capacity, size, embedded and valid; 3.11's have none before them).
  uint64_t dict_values_header = 8;
  // 3.11 (which has these too, from its table): an instance's values
  // pointer is this many bytes before it (3.13 embeds them after the
  // instance instead), and long_tag is ob_size, the signed digit count
  // (3.12 on: lv_tag, the count shifted 3 and the sign below).
  uint64_t values_before = kAbsent;
  bool long_signed_size = false;

  std::string Version() const;  // "3.13.5"
};

// The layout from the first bytes of _PyRuntime. Refuses (naming what and
// where) a missing cookie, a release whose shape is not known, bytes too
// short for it, and an offset not inside the size of its own struct.
Result<Layout> LayoutFromDebugOffsets(std::span<const uint8_t> runtime);

// The layout of CPython 3.11 (hex version `hex_version`), from a table.
Result<Layout> Layout311(uint64_t hex_version);
// The layout of CPython 3.12, from a table made from CPython's own 3.12
// headers (no 3.12 runs here: unit tests on memory images laid out by it
// stand for one).
Result<Layout> Layout312(uint64_t hex_version);

// The same from an ELF file: the debug offsets at its .PyRuntime section
// (else its _PyRuntime symbol); without them, by its Py_Version, the 3.11
// table.
Result<Layout> LayoutFromElfFile(const std::string& path);

// The frame owners that run no Python code, for a release: (the C stack's
// shim, the interpreter's base frame), 0xff where it has none.
std::pair<uint8_t, uint8_t> NonPythonOwners(int minor);

// The releases this reader knows the shape of, as "3.13, 3.14, 3.15".
std::string KnownReleases();

}  // namespace microscope::runtimes::python
