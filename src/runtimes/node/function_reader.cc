#include "src/runtimes/node/function_reader.h"

#include <algorithm>

#include "base/hex.h"

namespace microscope::runtimes::node {
namespace {

// ScopeInfo's flags (the same bits in V8 11 to 14).
constexpr uint32_t kScopeTypeMask = 0xf;
constexpr uint32_t kHasSavedClassVariable = 1u << 10;
constexpr uint32_t kFunctionVariableShift = 12;  // 2 bits; 0: no name slot
constexpr uint32_t kHasInferredName = 1u << 14;
constexpr uint32_t kIsEmpty = 1u << 29;
// Context-local names are inlined up to this count, else one hash table.
constexpr int64_t kMaxInlinedLocalNames = 75;
constexpr int64_t kMaxLocals = 1 << 20;

struct ScopeNames {
  uint64_t name = 0;      // tagged: a string, Smi 0 (no shared name) or none
  uint64_t inferred = 0;  // tagged string or undefined; 0: none
  int64_t start = -1;
};

// The names a ScopeInfo keeps (layouts from the v8dbg_ indices: see
// V8Layout::scope_info_first_vars).
Result<ScopeNames> ReadScopeInfo(HeapReader& heap, const V8Layout& l, uint64_t scope) {
  ScopeNames out;
  const bool modern = l.scope_info_first_vars >= 5;  // V8 13 on
  ASSIGN_OR_RETURN(uint64_t flags_word, heap.Word(scope, 8));
  const uint32_t flags = modern ? uint32_t(flags_word) : uint32_t(heap.SmiValue(flags_word));
  if ((flags & kIsEmpty) != 0) return out;
  const uint32_t type = flags & kScopeTypeMask;
  const uint32_t function_scope = modern ? 4 : 2, module_scope = modern ? 5 : 3;
  if (type == module_scope) return out;  // a module's own code: no name
  ASSIGN_OR_RETURN(uint64_t locals_word, heap.Word(scope, 8 + 8 * l.scope_info_context_locals));
  const int64_t locals = heap.SmiValue(locals_word);
  if (locals < 0 || locals > kMaxLocals) {
    return Status::Error(StatusCode::kDataLoss, "ScopeInfo at " + HexAddress(scope) + " claims " +
                                                    std::to_string(locals) + " locals");
  }
  if (modern && type == function_scope) {
    ASSIGN_OR_RETURN(uint64_t start, heap.Word(scope, 32));
    out.start = heap.SmiValue(start);
  }
  int64_t off = 8 + 8 * l.scope_info_first_vars;
  off += 8 * (locals < kMaxInlinedLocalNames ? locals : 1) + 8 * locals;
  if ((flags & kHasSavedClassVariable) != 0) off += 8;
  if (((flags >> kFunctionVariableShift) & 3) != 0) {
    ASSIGN_OR_RETURN(out.name, heap.Word(scope, off));
    off += 16;
  }
  if ((flags & kHasInferredName) != 0) {
    ASSIGN_OR_RETURN(out.inferred, heap.Word(scope, off));
    off += 8;
  }
  if (!modern && type == function_scope) {
    ASSIGN_OR_RETURN(uint64_t start, heap.Word(scope, off));
    out.start = heap.SmiValue(start);
  }
  return out;
}

// The text of `tagged` when it is a string ("" when it is not one).
Result<std::string> StringOrEmpty(HeapReader& heap, uint64_t tagged) {
  if (!heap.IsObject(tagged)) return std::string();
  ASSIGN_OR_RETURN(uint16_t type, heap.TypeOf(tagged));
  if (!heap.IsString(type)) return std::string();
  return heap.ReadString(tagged);
}

Status ReadScript(HeapReader& heap, const V8Layout& l, uint64_t script, FunctionInfo* out) {
  ASSIGN_OR_RETURN(uint16_t script_type, heap.TypeOf(script));
  if (script_type != l.type_script) return OkStatus();
  ASSIGN_OR_RETURN(uint64_t url, heap.Word(script, l.script_name));
  ASSIGN_OR_RETURN(out->script, StringOrEmpty(heap, url));
  ASSIGN_OR_RETURN(uint64_t source, heap.Word(script, l.script_source));
  if (heap.IsObject(source)) out->script_source = source;
  return OkStatus();
}

}  // namespace

Result<FunctionInfo> ReadFunction(HeapReader& heap, const V8Layout& l, uint64_t shared,
                                  uint64_t name_seen, uint64_t script_seen) {
  ASSIGN_OR_RETURN(uint16_t type, heap.TypeOf(shared));
  if (type != l.type_shared_function_info) {
    return Status::Error(StatusCode::kNotFound,
                         HexAddress(shared) + " is no longer a SharedFunctionInfo");
  }
  ASSIGN_OR_RETURN(uint64_t name_now, heap.Word(shared, l.shared_name));
  ASSIGN_OR_RETURN(uint64_t script_now, heap.Word(shared, l.shared_script));
  FunctionInfo out;
  uint64_t name_string = name_now;  // the name, where the SFI keeps it now
  uint64_t inferred_string = 0;
  if (heap.IsObject(name_now)) {
    ASSIGN_OR_RETURN(uint16_t name_type, heap.TypeOf(name_now));
    if (name_type == l.type_scope_info) {
      ASSIGN_OR_RETURN(ScopeNames scope, ReadScopeInfo(heap, l, name_now));
      name_string = scope.name;
      inferred_string = scope.inferred;
      out.start = scope.start;
    }
  }
  // A function compiled since the sample keeps the name string the walk saw
  // in its new ScopeInfo: still the same function.
  const bool same_name = name_now == name_seen || (name_string == name_seen && name_seen != 0);
  if (!same_name || script_now != script_seen) {
    return Status::Error(StatusCode::kNotFound, "SharedFunctionInfo at " + HexAddress(shared) +
                                                    " changed since the sample");
  }
  ASSIGN_OR_RETURN(std::string name, StringOrEmpty(heap, name_string));
  // The inferred name only where there is no name (the walk's copy of a
  // function holds the one that names it).
  std::string inferred;
  if (name.empty()) {
    ASSIGN_OR_RETURN(inferred, StringOrEmpty(heap, inferred_string));
  }
  out.name = !name.empty() ? name : !inferred.empty() ? inferred : "(anonymous)";
  // The script (Node 20: or a DebugInfo, which has no name for us). A name
  // that cannot be read leaves the function named, without its script: a
  // copy made by the walk holds a flat script name, not a cons string's
  // parts, and the process may be gone.
  if (heap.IsObject(script_now)) {
    Status script = ReadScript(heap, l, script_now, &out);
    if (!script.ok()) {
      out.script.clear();
      out.script_source = 0;
      out.script_error = script.message();
    }
  }
  return out;
}

SourceLines::SourceLines(const std::u16string& source) {
  starts_.push_back(0);
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == u'\n') starts_.push_back(int64_t(i) + 1);
  }
}

uint32_t SourceLines::LineOf(int64_t position) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), position);
  return uint32_t(it - starts_.begin());
}

uint32_t SourceLines::ColumnOf(int64_t position) const {
  const uint32_t line = LineOf(position);
  return line == 0 ? 0 : uint32_t(position - starts_[line - 1]);
}

}  // namespace microscope::runtimes::node
