#include "src/runtimes/node/layout.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>
#include <vector>

#include "src/symbols/elf_handle.h"
#include "src/symbols/elf_image.h"

namespace microscope::runtimes::node {
namespace {

constexpr std::string_view kPrefix = "v8dbg_";

// Every v8dbg_ symbol's int value, by its name without the prefix.
Result<std::map<std::string, int64_t>> ReadSymbols(Elf* elf, const std::string& path) {
  std::map<std::string, int64_t> out;
  Status error;
  symbols::ForEachDefinedSymbol(elf, SHT_DYNSYM, [&](const GElf_Sym& sym, std::string_view name) {
    if (!name.starts_with(kPrefix)) return true;
    int32_t value = 0;  // a symbol in .bss has no bytes in the file: 0
    Elf_Scn* holder = elf_getscn(elf, sym.st_shndx);
    GElf_Shdr hs;
    if (holder != nullptr && gelf_getshdr(holder, &hs) != nullptr && hs.sh_type != SHT_NOBITS) {
      std::span<const uint8_t> bytes = symbols::SymbolFileBytes(elf, sym);
      if (bytes.size() < sizeof(value)) {
        error = Status::Error(StatusCode::kDataLoss,
                              path + ": " + std::string(name) + " has no 4 bytes in its section");
        return false;
      }
      std::memcpy(&value, bytes.data(), sizeof(value));
    }
    out[std::string(name.substr(kPrefix.size()))] = value;
    return true;
  });
  RETURN_IF_ERROR(error);
  return out;
}

// The value of the one field the symbols starting with `prefix` give.
Result<int64_t> Field(const std::map<std::string, int64_t>& symbols, std::string_view prefix,
                      const std::string& path) {
  std::vector<std::pair<std::string, int64_t>> found;
  for (auto it = symbols.lower_bound(std::string(prefix));
       it != symbols.end() && std::string_view(it->first).substr(0, prefix.size()) == prefix;
       ++it) {
    found.emplace_back(it->first, it->second);
  }
  if (found.empty()) {
    return Status::Error(StatusCode::kUnavailable,
                         path + ": no v8dbg_" + std::string(prefix) + "* symbol");
  }
  for (const auto& [name, value] : found) {
    if (value != found[0].second) {
      return Status::Error(StatusCode::kDataLoss, path + ": v8dbg_" + found[0].first +
                                                      " and v8dbg_" + name + " disagree (" +
                                                      std::to_string(found[0].second) + ", " +
                                                      std::to_string(value) + ")");
    }
  }
  return found[0].second;
}

// The release (v8::internal::Version's ints in .symtab), and what it keeps
// where no v8dbg_ symbol says: the BytecodeArray's source position table
// (read from memory in each release below) and its entries' encoding.
void ReadVersion(Elf* elf, V8Layout* l) {
  auto int_of = [&](const char* name) -> int64_t {
    GElf_Sym sym;
    if (!symbols::FindSymbol(elf, name, &sym)) return 0;
    std::span<const uint8_t> bytes = symbols::SymbolFileBytes(elf, sym);
    int32_t v = 0;
    if (bytes.size() < sizeof(v)) return 0;
    std::memcpy(&v, bytes.data(), sizeof(v));
    return v;
  };
  l->version_major = int_of("_ZN2v88internal7Version6major_E");
  l->version_minor = int_of("_ZN2v88internal7Version6minor_E");
  // A Code object's fields (V8's code.h of each release, checked on a live
  // process of each): position table, deoptimization data, instruction
  // stream, instruction start, flags, instruction size; and the size of an
  // InstructionStream's header.
  struct CodeFields {
    int64_t positions, deopt, stream, start, flags, size, header;
  };
  static constexpr struct {
    int64_t major, minor, positions;
    bool flags_in_code_delta;
    CodeFields code;
  } kReleases[] = {
      {11, 3, 32, false, {24, 16, 32, 40, 48, 56, 16}},  // Node 20
      {12, 4, 24, false, {16, 8, 32, 40, 48, 52, 32}},   // Node 22
      {13, 6, 24, false, {16, 8, 32, 40, 52, 56, 32}},   // Node 24
      {14, 6, 24, true, {16, 8, 32, 40, 52, 56, 32}},    // Node 26
  };
  for (const auto& r : kReleases) {
    if (r.major == l->version_major && r.minor == l->version_minor) {
      l->bytecode_positions = r.positions;
      l->positions_flags_in_code_delta = r.flags_in_code_delta;
      l->code_positions = r.code.positions;
      l->code_deopt_data = r.code.deopt;
      l->code_instruction_stream = r.code.stream;
      l->code_instruction_start = r.code.start;
      l->code_flags = r.code.flags;
      l->code_size = r.code.size;
      l->stream_header = r.code.header;
    }
  }
}

// Where g_current_isolate_ lies from the thread pointer when the file is
// the executable: x86-64 puts the executable's TLS block first below it,
// at its size rounded up to its alignment (kept congruent with the
// segment's address), as glibc's _dl_determine_tlsoffset does.
void ReadIsolateTls(Elf* elf, V8Layout* l) {
  GElf_Sym sym;
  if (!symbols::FindSymbol(elf, "_ZN2v88internal18g_current_isolate_E", &sym) ||
      GELF_ST_TYPE(sym.st_info) != STT_TLS)
    return;
  size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0) return;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, int(i), &ph) == nullptr || ph.p_type != PT_TLS) continue;
    const uint64_t align = std::max<uint64_t>(ph.p_align, 1);
    if ((align & (align - 1)) != 0 || ph.p_memsz > (1u << 20) || sym.st_value + 8 > ph.p_memsz ||
        ph.p_memsz < align)
      return;
    const uint64_t first = (0 - (ph.p_vaddr & (align - 1))) & (align - 1);
    const uint64_t block = (ph.p_memsz - first + align - 1) / align * align + first;
    l->isolate_tls = int64_t(sym.st_value) - int64_t(block);
    return;
  }
}

}  // namespace

std::span<const V8Field> V8Fields() {
  static constexpr V8Field kFields[] = {
      {"off_fp_function", &V8Layout::fp_function},
      {"off_fp_context", &V8Layout::fp_context},
      {"off_fp_context_or_frame_type", &V8Layout::fp_context_or_type},
      {"off_fp_bytecode_array", &V8Layout::fp_bytecode_array},
      {"off_fp_bytecode_offset", &V8Layout::fp_bytecode_offset},
      {"HeapObjectTag", &V8Layout::heap_object_tag},
      {"HeapObjectTagMask", &V8Layout::heap_object_tag_mask},
      {"SmiShiftSize", &V8Layout::smi_shift_size},
      {"SmiTagMask", &V8Layout::smi_tag_mask},
      {"class_HeapObject__map__", &V8Layout::heap_object_map},
      {"class_Map__instance_type__", &V8Layout::map_instance_type},
      {"class_JSFunction__shared__", &V8Layout::function_shared},
      {"class_SharedFunctionInfo__name_or_scope_info__", &V8Layout::shared_name},
      // script_or_debug_info in Node 20, script from 22.
      {"class_SharedFunctionInfo__script", &V8Layout::shared_script},
      {"class_Script__name__", &V8Layout::script_name},
      {"class_Script__line_ends__", &V8Layout::script_line_ends},
      {"class_Script__source__", &V8Layout::script_source},
      {"scopeinfo_idx_ncontextlocals", &V8Layout::scope_info_context_locals},
      {"scopeinfo_idx_first_vars", &V8Layout::scope_info_first_vars},
      {"class_String__length__", &V8Layout::string_length},
      {"class_SeqOneByteString__chars__", &V8Layout::seq_one_byte_chars},
      {"class_SeqTwoByteString__chars__", &V8Layout::seq_two_byte_chars},
      {"class_ConsString__first__", &V8Layout::cons_first},
      {"class_ConsString__second__", &V8Layout::cons_second},
      {"class_ThinString__actual__", &V8Layout::thin_actual},
      {"class_SlicedString__parent__", &V8Layout::sliced_parent},
      {"class_SlicedString__offset__", &V8Layout::sliced_offset},
      {"class_ExternalString__resource__", &V8Layout::external_resource},
      {"IsNotStringMask", &V8Layout::is_not_string_mask},
      {"StringTag", &V8Layout::string_tag},
      {"StringRepresentationMask", &V8Layout::string_representation_mask},
      {"SeqStringTag", &V8Layout::seq_string_tag},
      {"ConsStringTag", &V8Layout::cons_string_tag},
      {"SlicedStringTag", &V8Layout::sliced_string_tag},
      {"ThinStringTag", &V8Layout::thin_string_tag},
      {"ExternalStringTag", &V8Layout::external_string_tag},
      {"StringEncodingMask", &V8Layout::string_encoding_mask},
      {"OneByteStringTag", &V8Layout::one_byte_string_tag},
      {"type_JSFunction__JS_FUNCTION_TYPE", &V8Layout::type_js_function},
      {"type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", &V8Layout::type_shared_function_info},
      {"LastJSFunctionType", &V8Layout::type_js_function_last},
      {"type_Script__SCRIPT_TYPE", &V8Layout::type_script},
      {"type_BytecodeArray__BYTECODE_ARRAY_TYPE", &V8Layout::type_bytecode_array},
      {"type_ScopeInfo__SCOPE_INFO_TYPE", &V8Layout::type_scope_info},
      {"class_BytecodeArray__data__", &V8Layout::bytecode_header},
      {"class_FixedArrayBase__length__", &V8Layout::byte_array_length},
  };
  return kFields;
}

Result<V8Layout> V8LayoutFromElfFile(const std::string& path) {
  ASSIGN_OR_RETURN(symbols::ElfFile file, symbols::OpenElfFile(path));
  ASSIGN_OR_RETURN(auto symbols, ReadSymbols(file.elf.get(), path));
  if (symbols.empty()) {
    return Status::Error(StatusCode::kNotFound, path + ": no v8dbg_ symbols (not a V8 image)");
  }
  V8Layout l;
  l.symbols = int64_t(symbols.size());
  for (const auto& [name, field] : V8Fields()) {
    const std::string_view n(name);
    if (n.starts_with("class_")) {
      ASSIGN_OR_RETURN(l.*field, Field(symbols, n, path));
      continue;
    }
    auto it = symbols.find(std::string(n));
    if (it == symbols.end() && field == &V8Layout::type_js_function_last) {
      l.type_js_function_last = l.type_js_function;  // Node 20: JS_FUNCTION_TYPE alone
      continue;
    }
    if (it == symbols.end()) {
      return Status::Error(StatusCode::kUnavailable,
                           path + ": no v8dbg_" + std::string(n) + " symbol");
    }
    l.*field = it->second;
  }
  auto cached = symbols.find("type_ExternalOneByteString__EXTERNAL_ONE_BYTE_STRING_TYPE");
  auto uncached =
      symbols.find("type_UncachedExternalString__UNCACHED_EXTERNAL_ONE_BYTE_STRING_TYPE");
  if (cached != symbols.end() && uncached != symbols.end()) {
    const int64_t bit = cached->second ^ uncached->second;
    if (bit != l.external_uncached_mask) {
      return Status::Error(StatusCode::kUnavailable,
                           path + ": uncached external strings differ by " + std::to_string(bit) +
                               " from cached ones, not by " +
                               std::to_string(l.external_uncached_mask));
    }
  }
  // V8 12 on: a class of its own; before, a FixedArrayBase.
  Result<int64_t> length = Field(symbols, "class_BytecodeArray__length__", path);
  if (!length.ok() && length.status().code() != StatusCode::kUnavailable) return length.status();
  l.bytecode_length = length.ok() ? *length : l.byte_array_length;
  ReadVersion(file.elf.get(), &l);
  ReadIsolateTls(file.elf.get(), &l);
  // What compiled frames' lines need beside the per-release fields; a
  // release without them has none (CodeKnown).
  static constexpr std::pair<const char*, int64_t V8Layout::*> kCode[] = {
      {"type_Code__CODE_TYPE", &V8Layout::type_code},
      {"type_InstructionStream__INSTRUCTION_STREAM_TYPE", &V8Layout::type_instruction_stream},
      {"CodeKindFieldMask", &V8Layout::code_kind_mask},
      {"CodeKindBaseline", &V8Layout::code_kind_baseline},
      {"DeoptimizationDataInliningPositionsIndex", &V8Layout::deopt_inlining_positions},
      {"DeoptimizationDataLiteralArrayIndex", &V8Layout::deopt_literals},
  };
  for (const auto& [name, field] : kCode) {
    auto it = symbols.find(name);
    if (it != symbols.end()) l.*field = it->second;
  }
  GElf_Sym sizes;
  if (symbols::FindSymbol(file.elf.get(), "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE",
                          &sizes) &&
      sizes.st_size % 3 == 0 && sizes.st_size > 12 && sizes.st_size <= 3 * 256) {
    std::span<const uint8_t> bytes = symbols::SymbolFileBytes(file.elf.get(), sizes);
    if (bytes.size() >= sizes.st_size)
      l.bytecode_sizes.assign(bytes.begin(), bytes.begin() + sizes.st_size);
  }
  if (auto it = symbols.find("DeoptimizationDataSharedFunctionInfoIndex"); it != symbols.end()) {
    l.deopt_shared = it->second;
  } else if (auto w = symbols.find("DeoptimizationDataWrappedSharedFunctionInfoIndex");
             w != symbols.end()) {
    l.deopt_shared = w->second;
    l.deopt_shared_wrapped = true;
  }
  return l;
}

Result<BuiltinsRanges> BuiltinsCode(const std::string& path) {
  ASSIGN_OR_RETURN(symbols::ElfFile file, symbols::OpenElfFile(path));
  ASSIGN_OR_RETURN(std::vector<symbols::LoadSegment> loads,
                   symbols::ElfLoadSegments(file.elf.get()));
  constexpr std::string_view kBuiltin = "Builtins_", kHandler = "Handler";
  struct Builtin {
    uint64_t start, end;
    bool handler;  // named *Handler
  };
  std::vector<Builtin> builtins;
  uint64_t thread_setname = 0;  // its address
  symbols::ForEachDefinedSymbol(
      file.elf.get(), SHT_SYMTAB, [&](const GElf_Sym& sym, std::string_view name) {
        if (GELF_ST_TYPE(sym.st_info) != STT_FUNC) return true;
        if (name == "uv_thread_setname") thread_setname = sym.st_value;
        if (!name.starts_with(kBuiltin)) return true;
        builtins.push_back({sym.st_value, sym.st_value + std::max<uint64_t>(sym.st_size, 1),
                            name.ends_with(kHandler)});
        return true;
      });
  if (builtins.empty()) {
    return Status::Error(StatusCode::kNotFound, path + ": no Builtins_* symbols (stripped?)");
  }
  std::sort(builtins.begin(), builtins.end(),
            [](const Builtin& a, const Builtin& b) { return a.start < b.start; });
  uint64_t lo = builtins.front().start, hi = 0;
  for (const Builtin& b : builtins) hi = std::max(hi, b.end);
  // The bytecode handlers are the builtins' last block (some others are
  // named *Handler too: Node 24's AtomicsMutexAsyncUnlockResolveHandler);
  // V8 has some 500 of them.
  size_t first = builtins.size();
  while (first > 0 && builtins[first - 1].handler) --first;
  const bool one_block = builtins.size() - first >= 100;
  const uint64_t handlers_lo = one_block ? builtins[first].start : 0, handlers_hi = hi;
  BuiltinsRanges r;
  for (const symbols::LoadSegment& s : loads) {
    if (thread_setname >= s.vaddr && thread_setname < s.vaddr + s.filesz)
      r.thread_setname = thread_setname - s.vaddr + s.offset;
  }
  for (const symbols::LoadSegment& s : loads) {
    if (lo >= s.vaddr && hi <= s.vaddr + s.filesz) {
      r.all = {lo - s.vaddr + s.offset, hi - s.vaddr + s.offset};
      if (one_block)
        r.handlers = {handlers_lo - s.vaddr + s.offset, handlers_hi - s.vaddr + s.offset};
      return r;
    }
  }
  return Status::Error(StatusCode::kDataLoss,
                       path + ": V8's builtins lie outside one loaded segment");
}

}  // namespace microscope::runtimes::node
