#include "src/runtimes/node/code_reader.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <tuple>

#include "base/hex.h"
#include "src/runtimes/node/heap_reader.h"

namespace microscope::runtimes::node {
namespace {

constexpr uint64_t kAlignment = 64;           // V8's code alignment on x64
constexpr uint64_t kChunk = 4096;             // bytes read at once while scanning
constexpr int64_t kMaxTable = 1 << 20;        // bytes of a position table
constexpr int64_t kMaxInlined = 1 << 14;      // inlined calls of one code object
constexpr size_t kInliningPositionSize = 16;  // a SourcePosition, a function id, padding

// The bytes of a byte array (ByteArray, TrustedByteArray, PodArray): its
// length (a Smi) after the map, its bytes after that.
Result<std::vector<uint8_t>> ByteArrayBytes(record::ProcessMemory& memory, HeapReader& heap,
                                            const V8Layout& l, uint64_t array, int64_t max,
                                            const char* what) {
  if (!heap.IsObject(array)) return std::vector<uint8_t>{};
  ASSIGN_OR_RETURN(uint64_t length, heap.Word(array, l.byte_array_length));
  if (!heap.IsSmi(length) || heap.SmiValue(length) < 0 || heap.SmiValue(length) > max) {
    return Status::Error(StatusCode::kDataLoss,
                         std::string(what) + " at " + HexAddress(array) + ": length out of range");
  }
  std::vector<uint8_t> bytes(size_t(heap.SmiValue(length)));
  if (!bytes.empty() &&
      !memory.Read(array - uint64_t(l.heap_object_tag) + uint64_t(l.byte_array_length) + 8,
                   bytes.data(), bytes.size())) {
    return Status::Error(StatusCode::kUnavailable,
                         std::string(what) + " at " + HexAddress(array) + " not readable");
  }
  return bytes;
}

// A baseline code's bytecode offset table: for each bytecode (after the
// prologue), in order, the size of its code as an unsigned varint (7 bits a
// byte, low first). The bytecodes come from the array the code runs, each
// sized by kBytecodeSizes[scale][bytecode]; a Wide or ExtraWide prefix (and
// their debug-break forms, bytecodes 0 to 3) scales the one after it.
Status ReadBaseline(record::ProcessMemory& memory, HeapReader& heap, const V8Layout& l,
                    CompiledCode* code) {
  ASSIGN_OR_RETURN(uint64_t table, heap.Word(code->code, l.code_positions));
  ASSIGN_OR_RETURN(std::vector<uint8_t> deltas,
                   ByteArrayBytes(memory, heap, l, table, kMaxTable, "bytecode offset table"));
  ASSIGN_OR_RETURN(uint64_t array, heap.Word(code->code, l.code_deopt_data));
  ASSIGN_OR_RETURN(uint16_t type, heap.TypeOf(array));
  if (type != l.type_bytecode_array) return OkStatus();  // interpreter data: no line
  ASSIGN_OR_RETURN(uint64_t length, heap.Word(array, l.bytecode_length));
  if (!heap.IsSmi(length) || heap.SmiValue(length) <= 0 || heap.SmiValue(length) > kMaxTable) {
    return Status::Error(StatusCode::kDataLoss,
                         "bytecodes at " + HexAddress(array) + ": length out of range");
  }
  std::vector<uint8_t> bytecodes(size_t(heap.SmiValue(length)));
  if (!memory.Read(array - uint64_t(l.heap_object_tag) + uint64_t(l.bytecode_header),
                   bytecodes.data(), bytecodes.size())) {
    return Status::Error(StatusCode::kUnavailable,
                         "bytecodes at " + HexAddress(array) + " not readable");
  }
  const size_t kinds = l.bytecode_sizes.size() / 3;
  auto size_at = [&](size_t at) -> size_t {
    const uint8_t b = bytecodes[at];
    if (b > 3) return b < kinds ? l.bytecode_sizes[b] : 0;
    const size_t scale = (b == 0 || b == 2) ? 1 : 2;  // Wide, DebugBreakWide: 1
    if (at + 1 >= bytecodes.size() || bytecodes[at + 1] >= kinds) return 0;
    return 1 + l.bytecode_sizes[scale * kinds + bytecodes[at + 1]];
  };
  int64_t end = 0, offset = -1;
  size_t at = 0;
  for (size_t i = 0; i < deltas.size();) {
    uint64_t delta = 0;
    int shift = 0;
    for (;; shift += 7) {
      if (i >= deltas.size() || shift > 28) {
        return Status::Error(StatusCode::kDataLoss,
                             "bytecode offset table at " + HexAddress(table) + ": varint cut");
      }
      delta |= uint64_t(deltas[i] & 0x7f) << shift;
      if ((deltas[i++] & 0x80) == 0) break;
    }
    end += int64_t(delta);
    if (offset >= 0) {
      const size_t size = size_at(at);
      if (size == 0) {
        return Status::Error(
            StatusCode::kDataLoss,
            "bytecodes at " + HexAddress(array) + ": unknown bytecode at " + std::to_string(at));
      }
      at += size;
    }
    offset = code->bytecode_ends.empty() ? -1 : int64_t(at);
    if (at >= bytecodes.size() && offset >= 0) break;  // more entries than bytecodes
    code->bytecode_ends.emplace_back(end, offset);
  }
  code->baseline = true;
  code->bytecode_array = array;
  return OkStatus();
}

// The deoptimization data's literals (the inlined functions among them):
// the array and its length; none when the build's index is not known or
// the array does not read.
struct Literals {
  uint64_t array = 0;
  int64_t count = 0;
};

template <typename Element>
Literals ReadLiterals(HeapReader& heap, const V8Layout& l, const Element& element) {
  if (l.deopt_literals < 0) return {};
  Result<uint64_t> array = element(l.deopt_literals);
  if (!array.ok() || !heap.IsObject(*array)) return {};
  Result<uint64_t> length = heap.Word(*array, 8);
  if (!length.ok() || !heap.IsSmi(*length) || heap.SmiValue(*length) > kMaxInlined) return {};
  return {*array, heap.SmiValue(*length)};
}

// An inlined call's function, literal `index`: a weak reference (V8 13 on)
// is a pointer with bit 1 set, a cleared one has 3 in its low word; the
// function's name and script words are read with it (its naming proves
// them, and its type). What cannot be read is left unknown (0): the call's
// frame is then left out, its caller keeps its line.
void ReadInlinedFunction(HeapReader& heap, const V8Layout& l, const Literals& literals,
                         int32_t index, CompiledCode::Inlined* call) {
  if (index < 0 || index >= literals.count) return;
  Result<uint64_t> word = heap.Word(literals.array, 16 + 8 * int64_t(index));
  if (!word.ok() || uint32_t(*word) == 3) return;  // unreadable, or a cleared reference
  const uint64_t shared = *word & ~uint64_t(2);
  if (!heap.IsObject(shared)) return;
  Result<uint64_t> name = heap.Word(shared, l.shared_name);
  Result<uint64_t> script = heap.Word(shared, l.shared_script);
  if (!name.ok() || !script.ok()) return;
  call->shared = shared;
  call->name = *name;
  call->script = *script;
}

}  // namespace

Result<CompiledCode> ReadCompiledCode(record::ProcessMemory& memory, const V8Layout& l, uint64_t pc,
                                      uint64_t max_scan) {
  if (!l.CodeKnown()) {
    return Status::Error(StatusCode::kUnavailable, "this V8 release's Code is not known");
  }
  HeapReader heap(&memory, &l);
  const uint64_t header = uint64_t(l.stream_header);
  // Downward from pc, page by page, each aligned address whose header
  // holds two tagged words, the second a Code pointing back at that stream
  // and start. A page that does not read ends the search (code pages sit
  // above a guard page).
  std::array<uint8_t, kChunk> page;
  const uint64_t first = pc & ~(kChunk - 1);
  for (uint64_t p = first; p + max_scan > first && p >= kChunk; p -= kChunk) {
    if (!memory.Read(p, page.data(), page.size())) {
      if (p == first) {
        return Status::Error(StatusCode::kNotFound,
                             "the code at " + HexAddress(pc) + " is not readable (freed since?)");
      }
      return Status::Error(StatusCode::kDataLoss, "no V8 code found below " + HexAddress(pc) +
                                                      " (nothing readable at " + HexAddress(p) +
                                                      ")");
    }
    const uint64_t highest = p == first ? (pc & ~(kAlignment - 1)) : p + kChunk - kAlignment;
    for (uint64_t s = highest + kAlignment; s > p;) {
      s -= kAlignment;
      uint64_t words[2];
      if (s - header >= p) {
        std::memcpy(words, page.data() + (s - header - p), sizeof(words));
      } else if (!memory.Read(s - header, words, sizeof(words))) {
        continue;
      }
      if (!heap.IsObject(words[0]) || !heap.IsObject(words[1])) continue;
      const uint64_t stream = s - header + uint64_t(l.heap_object_tag);
      Result<uint64_t> back = heap.Word(words[1], l.code_instruction_stream);
      Result<uint64_t> start = heap.Word(words[1], l.code_instruction_start);
      if (!back.ok() || !start.ok() || *back != stream || *start != s) continue;
      Result<uint16_t> type = heap.TypeOf(words[1]);
      Result<uint16_t> stream_type = heap.TypeOf(stream);
      if (!type.ok() || *type != l.type_code || !stream_type.ok() ||
          *stream_type != l.type_instruction_stream)
        continue;
      CompiledCode code;
      code.code = words[1];
      code.start = s;
      uint32_t flags = 0;
      int32_t size = 0;
      const uint64_t base = words[1] - uint64_t(l.heap_object_tag);
      if (!memory.Read(base + uint64_t(l.code_flags), &flags, sizeof(flags)) ||
          !memory.Read(base + uint64_t(l.code_size), &size, sizeof(size)) || size <= 0) {
        return Status::Error(StatusCode::kUnavailable, "code at " + HexAddress(s) + ": no size");
      }
      code.size = uint64_t(size);
      if (pc > s + code.size) {
        return Status::Error(StatusCode::kDataLoss, HexAddress(pc) + " is past the code at " +
                                                        HexAddress(s) + " (" +
                                                        std::to_string(size) + " bytes)");
      }
      code.kind = int64_t(flags & uint64_t(l.code_kind_mask));
      code.optimized =
          code.kind == l.code_kind_baseline + 1 || code.kind == l.code_kind_baseline + 2;
      if (code.kind == l.code_kind_baseline && !l.bytecode_sizes.empty()) {
        RETURN_IF_ERROR(ReadBaseline(memory, heap, l, &code));
      }
      if (!code.optimized) return code;
      ASSIGN_OR_RETURN(uint64_t table, heap.Word(words[1], l.code_positions));
      ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                       ByteArrayBytes(memory, heap, l, table, kMaxTable, "position table"));
      ASSIGN_OR_RETURN(code.positions, DecodePositionTable(bytes, l.positions_flags_in_code_delta));
      // The deoptimization data: a fixed array (map, length, elements).
      ASSIGN_OR_RETURN(uint64_t deopt, heap.Word(words[1], l.code_deopt_data));
      if (!heap.IsObject(deopt)) return code;  // nothing inlined, no function said
      auto element = [&](int64_t i) { return heap.Word(deopt, 16 + 8 * i); };
      ASSIGN_OR_RETURN(uint64_t shared, element(l.deopt_shared));
      if (l.deopt_shared_wrapped && heap.IsObject(shared)) {
        ASSIGN_OR_RETURN(shared, heap.Word(shared, 8));
      }
      code.shared = shared;
      ASSIGN_OR_RETURN(uint64_t inlining, element(l.deopt_inlining_positions));
      ASSIGN_OR_RETURN(
          std::vector<uint8_t> positions,
          ByteArrayBytes(memory, heap, l, inlining, kMaxInlined * int64_t(kInliningPositionSize),
                         "inlining positions"));
      const Literals literals = ReadLiterals(heap, l, element);
      for (size_t at = 0; at + kInliningPositionSize <= positions.size();
           at += kInliningPositionSize) {
        uint64_t raw;
        int32_t function;
        std::memcpy(&raw, positions.data() + at, sizeof(raw));
        std::memcpy(&function, positions.data() + at + sizeof(raw), sizeof(function));
        CompiledCode::Inlined call;
        call.position = int64_t((raw >> 1) & 0x3fffffff) - 1;
        call.caller = int32_t((raw >> 31) & 0xffff) - 1;
        ReadInlinedFunction(heap, l, literals, function, &call);
        code.inlined.push_back(call);
      }
      return code;
    }
  }
  return Status::Error(
      StatusCode::kDataLoss,
      "no V8 code found within " + std::to_string(max_scan) + " bytes below " + HexAddress(pc));
}

bool StillThere(record::ProcessMemory& memory, const V8Layout& l, const CompiledCode& code) {
  uint64_t named = 0;  // the stream header's second word
  return memory.Read(code.start - uint64_t(l.stream_header) + 8, &named, sizeof(named)) &&
         named == code.code;
}

bool FunctionsAt(const CompiledCode& code, uint64_t pc, bool return_address,
                 std::vector<InlinedAt>* chain) {
  chain->clear();
  if (pc < code.start) return false;
  const int64_t offset = int64_t(pc - code.start) - (return_address ? 1 : 0);
  const PositionEntry* e = EntryAt(code.positions, offset);
  if (e == nullptr) return false;
  int64_t position = e->position;
  int32_t inlining = e->inlining;
  // Each inlined call's position is in its caller; the outermost caller's
  // is the frame's. Bounded: a cycle in untrusted ids ends it.
  for (size_t steps = 0; inlining >= 0; ++steps) {
    if (size_t(inlining) >= code.inlined.size() || steps > code.inlined.size()) {
      chain->clear();
      return false;
    }
    const CompiledCode::Inlined& call = code.inlined[size_t(inlining)];
    chain->push_back({&call, position});
    position = call.position;
    inlining = call.caller;
  }
  chain->push_back({nullptr, position});
  return true;
}

std::optional<int64_t> BaselineOffset(const CompiledCode& code, uint64_t pc, bool return_address) {
  if (pc < code.start) return std::nullopt;
  // A return address ends its call's code; the sampled instruction is in
  // the bytecode whose code it starts or is inside.
  const int64_t p = int64_t(pc - code.start) + (return_address ? 0 : 1);
  auto it =
      std::lower_bound(code.bytecode_ends.begin(), code.bytecode_ends.end(), p,
                       [](const std::pair<int64_t, int64_t>& e, int64_t v) { return e.first < v; });
  if (it == code.bytecode_ends.end() || it->second < 0) return std::nullopt;
  return it->second;
}

}  // namespace microscope::runtimes::node
