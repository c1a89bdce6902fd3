// Where a V8 build keeps what a JavaScript stack walker reads, from the
// v8dbg_ symbols V8 exports for debuggers (postmortem metadata): each an
// int in the binary (in .bss when it is 0), read from the ELF file. Field
// symbols end in their type, whose spelling changes between releases
// (`...__name_or_scope_info__Object` in Node 20, `...Tagged_Object_` in 22,
// `...Tagged_NameOrScopeInfoT_` in 24), so they are found by prefix; a
// field two symbols give with different values is refused, as is a field
// no symbol gives, by name.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace microscope::runtimes::node {

struct V8Layout {
  // Frame slots, from the frame pointer.
  int64_t fp_function = 0;
  int64_t fp_context = 0;
  int64_t fp_context_or_type = 0;  // a context, or a Smi marking a typed frame
  int64_t fp_bytecode_array = 0;
  int64_t fp_bytecode_offset = 0;
  // Tagged pointers and small integers.
  int64_t heap_object_tag = 0;
  int64_t heap_object_tag_mask = 0;
  int64_t smi_shift_size = 0;
  int64_t smi_tag_mask = 0;
  // Object fields.
  int64_t heap_object_map = 0;
  int64_t map_instance_type = 0;
  int64_t function_shared = 0;  // JSFunction -> SharedFunctionInfo
  int64_t shared_name = 0;      // SharedFunctionInfo -> its name (or ScopeInfo)
  int64_t shared_script = 0;    // SharedFunctionInfo -> Script (or DebugInfo, Node 20)
  int64_t script_name = 0;      // Script -> its name (the URL)
  int64_t script_line_ends = 0;
  int64_t script_source = 0;
  // ScopeInfo: the index (in words after the map) of its context-local
  // count and of its first variable-length field. The latter tells its two
  // layouts apart: 3 (V8 11 and 12: Smi flags, positions after the
  // variables) or 5 (V8 13 on: uint32 flags, positions at words 3 and 4).
  int64_t scope_info_context_locals = 0;
  int64_t scope_info_first_vars = 0;
  // Strings.
  int64_t string_length = 0;       // int32
  int64_t seq_one_byte_chars = 0;  // SeqOneByteString's characters
  int64_t seq_two_byte_chars = 0;
  int64_t cons_first = 0;
  int64_t cons_second = 0;
  int64_t thin_actual = 0;
  int64_t sliced_parent = 0;
  int64_t sliced_offset = 0;  // Smi
  // An external string's resource: a C++ object outside the heap, then
  // (unless the string is uncached) the pointer to its characters that
  // V8 caches beside it. Node builds V8 without its sandbox, so both are
  // raw 8-byte pointers.
  int64_t external_resource = 0;
  // The instance type bit of uncached external strings (whose characters
  // only the resource's virtual data() knows): V8's
  // kUncachedExternalStringMask, 1 << 4 since V8 7, and checked against
  // the uncached and cached one-byte types where the image exports both
  // (Node 22 on).
  int64_t external_uncached_mask = 1 << 4;
  // String instance types: (type & is_not_string_mask) == string_tag for
  // strings, whose representation and encoding are bit fields.
  int64_t is_not_string_mask = 0;
  int64_t string_tag = 0;
  int64_t string_representation_mask = 0;
  int64_t seq_string_tag = 0;
  int64_t cons_string_tag = 0;
  int64_t sliced_string_tag = 0;
  int64_t thin_string_tag = 0;
  int64_t external_string_tag = 0;
  int64_t string_encoding_mask = 0;
  int64_t one_byte_string_tag = 0;
  // Instance types. JSFunctions are those from first to last (Node 20 gives
  // no LastJSFunctionType: JS_FUNCTION_TYPE alone).
  int64_t type_js_function = 0;
  int64_t type_js_function_last = 0;
  int64_t type_shared_function_info = 0;
  int64_t type_script = 0;
  int64_t type_bytecode_array = 0;
  int64_t type_scope_info = 0;
  int64_t symbols = 0;  // v8dbg_ symbols in the file
  // Interpreted frames' lines. The bytecodes' start (v8dbg); the V8 release
  // (v8::internal::Version in .symtab, 0 when absent) and what no v8dbg_
  // symbol gives, known per release (LineTableKnown): where a BytecodeArray
  // keeps its source position table and how its entries are written.
  int64_t bytecode_header = 0;
  int64_t byte_array_length = 0;  // FixedArrayBase's length (a Smi); bytes follow it
  int64_t bytecode_length = 0;    // a BytecodeArray's length (a Smi): its own, or FixedArrayBase's
  int64_t version_major = 0, version_minor = 0;
  int64_t bytecode_positions = -1;  // -1: this release's is not known
  bool positions_flags_in_code_delta = false;
  bool LineTableKnown() const { return bytecode_positions >= 0; }
  // Lines of compiled frames (Maglev and TurboFan code), known per release
  // like the bytecode's (CodeKnown): a Code object's fields (its source
  // position table, deoptimization data, instruction stream, start, size
  // and flags), where an InstructionStream's instructions start (they are
  // 64-byte aligned, after a header whose second word is the Code), and,
  // from v8dbg_ symbols, the instance types, the kind bits of the flags,
  // the baseline kind (Maglev and TurboFan are the next two) and the index
  // of the inlining positions in the deoptimization data.
  int64_t code_positions = -1;  // -1: this release's Code is not known
  int64_t code_deopt_data = 0;
  int64_t code_instruction_stream = 0;
  int64_t code_instruction_start = 0;
  int64_t code_flags = 0;  // uint32
  int64_t code_size = 0;   // int32
  int64_t stream_header = 0;
  int64_t type_code = -1;
  int64_t type_instruction_stream = -1;
  int64_t code_kind_mask = 0;
  int64_t code_kind_baseline = -1;
  int64_t deopt_inlining_positions = -1;
  // The index of the literals (the inlined functions among them) in the
  // deoptimization data; -1: not known (inlined calls are then no frames).
  int64_t deopt_literals = -1;
  // The index of the code's SharedFunctionInfo in its deoptimization data;
  // from V8 13 on a wrapper's (the SFI is its second word).
  int64_t deopt_shared = -1;
  bool deopt_shared_wrapped = false;
  // V8's kBytecodeSizes[3][n] (each bytecode's size at each operand scale:
  // baseline frames' lines), from the file's symbol table; empty when the
  // file has none (stripped).
  std::vector<uint8_t> bytecode_sizes;
  bool CodeKnown() const {
    return code_positions >= 0 && type_code >= 0 && type_instruction_stream >= 0 &&
           code_kind_mask > 0 && code_kind_baseline >= 0 && deopt_inlining_positions >= 0 &&
           deopt_shared >= 0;
  }
  // Where V8's thread-local current isolate (g_current_isolate_) lies from
  // the thread pointer when the file is a process's executable (whose TLS
  // block is static); 0 when the file has no such symbol.
  int64_t isolate_tls = 0;
};

// Each field, with the v8dbg_ name it is read from: names ending in "__"
// are fields, whose type follows; the others are exact (off_fp_context is
// not off_fp_context_or_frame_type).
struct V8Field {
  const char* symbol;
  int64_t V8Layout::*field;
};
std::span<const V8Field> V8Fields();

// The layout of the V8 in the ELF file at `path`. kNotFound: no v8dbg_
// symbols (not a V8 image).
Result<V8Layout> V8LayoutFromElfFile(const std::string& path);

// Where the file keeps V8's embedded builtins (the interpreter's entry and
// handlers, the JS entry, ...): the file-offset range their Builtins_*
// symbols cover. They have no CFI and keep frame pointers. Refused when
// the file has no such symbols (a stripped image).
struct FileRange {
  uint64_t begin = 0, end = 0;
};
// Where V8's builtins lie in an image (file offsets, by their Builtins_*
// symbols), and within them its bytecode handlers (Builtins_*Handler: one
// block at the builtins' end); handlers empty when they are not one block
// of their own.
struct BuiltinsRanges {
  FileRange all, handlers;
  // And where Node's uv_thread_setname starts (a file offset; 0: not in
  // the image), where a thread's name can be heard in full.
  uint64_t thread_setname = 0;
};
Result<BuiltinsRanges> BuiltinsCode(const std::string& path);

}  // namespace microscope::runtimes::node
