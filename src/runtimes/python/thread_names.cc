#include "src/runtimes/python/thread_names.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "base/hex.h"

namespace microscope::runtimes::python {
namespace {

// Include/object.h: tp_flags bits (inline values from 3.13; a managed
// dict from 3.11).
constexpr uint64_t kInlineValues = 1 << 2;
constexpr uint64_t kManagedDict = 1 << 4;
// Include/internal/pycore_object.h: MANAGED_DICT_OFFSET, -3 words (3.11's
// _PyObject_ManagedDictPointer too).
constexpr uint64_t kManagedDictBefore = 24;
// Include/internal/pycore_moduleobject.h: PyModuleObject.md_dict, after
// PyObject_HEAD.
constexpr uint64_t kModuleDict = 16;
// Include/cpython/object.h: PyHeapTypeObject's words between its
// PyTypeObject and ht_cached_keys: as_async (4), as_number (36),
// as_mapping (3), as_sequence (10), as_buffer (2), ht_name, ht_slots,
// ht_qualname.
constexpr uint64_t kCachedKeysAfterType = 58 * 8;
// Include/internal/pycore_dict.h: struct _dictkeysobject's header, where
// its indices start (3.11 to 3.15).
constexpr uint64_t kKeysHeader = 32;
constexpr int64_t kMaxEntries = 1 << 16;  // of a dict searched
constexpr int64_t kMaxThreads = 4096;     // of threading._active

Status NotA(const char* what, uint64_t address, const std::string& why) {
  return Status::Error(StatusCode::kDataLoss,
                       std::string(what) + " at " + HexAddress(address) + " " + why);
}

// A dict's keys table: its kind (0: any keys, with their hashes; 1 and 2:
// str keys only), how many entries are in use, and where they start.
struct Keys {
  uint8_t kind = 0;
  int64_t entries_used = 0;
  uint64_t entries = 0;
  uint64_t EntrySize() const { return kind == 0 ? 24 : 16; }
};

Result<Keys> ReadKeys(ProcessMemory& memory, uint64_t address) {
  uint8_t header[kKeysHeader];
  if (!memory.Read(address, header, sizeof(header))) return Unreadable("dict keys", address);
  const uint8_t log2_size = header[8], log2_index_bytes = header[9];
  Keys k;
  k.kind = header[10];
  std::memcpy(&k.entries_used, header + 24, 8);
  // Each index is 1, 2, 4 or 8 bytes.
  if (log2_size > 30 || log2_index_bytes < log2_size || log2_index_bytes > log2_size + 3 ||
      k.kind > 2 || k.entries_used < 0 || k.entries_used > (int64_t(1) << log2_size)) {
    return NotA("dict keys", address,
                "is not a keys table (size 2^" + std::to_string(log2_size) + ", index bytes 2^" +
                    std::to_string(log2_index_bytes) + ", kind " + std::to_string(k.kind) + ", " +
                    std::to_string(k.entries_used) + " entries)");
  }
  k.entries = address + kKeysHeader + (uint64_t(1) << log2_index_bytes);
  return k;
}

// Entries [from, to) of `keys`: (key, value) pairs, a deleted one's key 0.
Result<std::vector<std::pair<uint64_t, uint64_t>>> ReadEntries(ProcessMemory& memory,
                                                               const Keys& keys, int64_t from,
                                                               int64_t to) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (to <= from) return out;
  const uint64_t size = keys.EntrySize();
  std::vector<uint64_t> words(size_t(to - from) * size / 8);
  if (!memory.Read(keys.entries + uint64_t(from) * size, words.data(), words.size() * 8)) {
    return Unreadable("dict entries", keys.entries + uint64_t(from) * size);
  }
  const size_t skip = keys.kind == 0 ? 1 : 0;  // the hash
  for (size_t i = 0; i < words.size(); i += size / 8)
    out.emplace_back(words[i + skip], words[i + skip + 1]);
  return out;
}

// Whether the object at `str` is a str holding exactly `text` (ASCII).
bool StrIs(ProcessMemory& memory, const Layout& layout, const InterpreterAddresses& at,
           uint64_t str, std::string_view text) {
  uint64_t type;
  uint32_t state;
  int64_t length;
  if (!ReadValue(memory, str + layout.object_type, &type) || type != at.str ||
      !ReadValue(memory, str + layout.str_length, &length) || length != int64_t(text.size()) ||
      !ReadValue(memory, str + layout.str_state, &state)) {
    return false;
  }
  const bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || !ascii) return false;
  std::string got(text.size(), '\0');
  return memory.Read(str + layout.str_ascii_data, got.data(), got.size()) && got == text;
}

// Where str key `name` is among `keys`' entries [from, to): its index
// (-1: not there) and the value its entry holds (a split dict's is apart).
struct Found {
  int64_t index = -1;
  uint64_t value = 0;
};
Result<Found> FindKey(ProcessMemory& memory, const Layout& layout, const InterpreterAddresses& at,
                      const Keys& keys, int64_t from, int64_t to, std::string_view name) {
  ASSIGN_OR_RETURN(auto entries, ReadEntries(memory, keys, from, to));
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].first != 0 && StrIs(memory, layout, at, entries[i].first, name))
      return Found{from + int64_t(i), entries[i].second};
  }
  return Found{};
}

// Value `index` of a PyDictValues at `values`: a split dict's, or (3.11)
// an instance's, which keeps the same struct behind its values pointer.
Result<uint64_t> ValueAt(ProcessMemory& memory, const Layout& layout, uint64_t values,
                         int64_t index) {
  uint64_t value;
  if (!ReadValue(memory, values + layout.dict_values_header + uint64_t(index) * 8, &value))
    return Unreadable("dict values", values);
  return value;
}

// The value of str key `name` in the dict at `dict`, 0 when it has none.
Result<uint64_t> DictGet(ProcessMemory& memory, const Layout& layout,
                         const InterpreterAddresses& at, uint64_t dict, std::string_view name) {
  RETURN_IF_ERROR(CheckType(memory, layout, dict, at.dict, "dict"));
  uint64_t keys_at, values;
  if (!ReadValue(memory, dict + layout.dict_keys, &keys_at) ||
      !ReadValue(memory, dict + layout.dict_values, &values)) {
    return Unreadable("dict", dict);
  }
  ASSIGN_OR_RETURN(Keys keys, ReadKeys(memory, keys_at));
  if (keys.entries_used > kMaxEntries) return NotA("dict", dict, "has more than 65536 entries");
  ASSIGN_OR_RETURN(Found found, FindKey(memory, layout, at, keys, 0, keys.entries_used, name));
  if (found.index < 0 || values == 0) return found.value;
  return ValueAt(memory, layout, values, found.index);  // a split dict's, apart from its keys
}

// Where a type's instances keep attribute `name` (python's
// _PyObject_GetInstanceAttribute): in their values, at its index among the
// type's cached keys (-1: not among them), inline after the instance's
// basic_size (3.13 on) or behind the values pointer before it (3.11); or
// in the managed dict.
struct InstanceLayout {
  uint64_t basic_size = 0;
  int64_t index = -1;
  bool managed_dict = false;
};
using InstanceLayouts = std::unordered_map<uint64_t, InstanceLayout>;  // by type

Result<InstanceLayout> LayoutOf(ProcessMemory& memory, const Layout& layout,
                                const InterpreterAddresses& at, uint64_t type,
                                std::string_view name, InstanceLayouts* known) {
  if (auto it = known->find(type); it != known->end()) return it->second;
  uint64_t flags;
  int64_t basic_size;
  // tp_basicsize follows tp_name.
  if (!ReadValue(memory, type + layout.type_flags, &flags) ||
      !ReadValue(memory, type + layout.type_name + 8, &basic_size)) {
    return Unreadable("type", type);
  }
  InstanceLayout l;
  l.managed_dict = flags & kManagedDict;
  const bool values =
      layout.values_before != Layout::kAbsent ? l.managed_dict : (flags & kInlineValues) != 0;
  if (values && basic_size > 0 && basic_size < (1 << 20)) {
    uint64_t cached_keys;
    if (!ReadValue(memory, type + layout.type_size + kCachedKeysAfterType, &cached_keys))
      return Unreadable("type", type);
    if (cached_keys != 0) {
      ASSIGN_OR_RETURN(Keys keys, ReadKeys(memory, cached_keys));
      const int64_t used = std::min<int64_t>(keys.entries_used, 255);  // a capacity is a byte
      ASSIGN_OR_RETURN(Found found, FindKey(memory, layout, at, keys, 0, used, name));
      l.index = found.index;
      l.basic_size = uint64_t(basic_size);
    }
  }
  known->emplace(type, l);
  return l;
}

// The value of attribute `name` in the instance dict of the object at
// `object` (its inline values, else its managed dict), 0 when it has none.
Result<uint64_t> InstanceAttribute(ProcessMemory& memory, const Layout& layout,
                                   const InterpreterAddresses& at, uint64_t object,
                                   std::string_view name, InstanceLayouts* known) {
  uint64_t type;
  if (!ReadValue(memory, object + layout.object_type, &type)) return Unreadable("object", object);
  ASSIGN_OR_RETURN(InstanceLayout l, LayoutOf(memory, layout, at, type, name, known));
  if (l.index >= 0 && layout.values_before != Layout::kAbsent) {
    // 3.11: the values apart, the dict made from them once they are given
    // up (the pointer then 0).
    uint64_t values;
    if (!ReadValue(memory, object - layout.values_before, &values))
      return Unreadable("object", object);
    if (values != 0) return ValueAt(memory, layout, values, l.index);
  } else if (l.index >= 0) {
    // struct _dictvalues: capacity, size, embedded, valid, then the values.
    const uint64_t values = object + l.basic_size;
    std::vector<uint64_t> words(size_t(l.index) + 2);
    if (!memory.Read(values, words.data(), words.size() * 8))
      return Unreadable("inline values", values);
    const uint8_t capacity = uint8_t(words[0]), valid = uint8_t(words[0] >> 24);
    if (valid != 0 && l.index < capacity && words[size_t(l.index) + 1] != 0)
      return words[size_t(l.index) + 1];
  }
  if (!l.managed_dict) return uint64_t(0);
  uint64_t dict;
  if (!ReadValue(memory, object - kManagedDictBefore, &dict)) return Unreadable("object", object);
  if (dict == 0) return uint64_t(0);
  return DictGet(memory, layout, at, dict, name);
}

// An int object's value, for a non-negative one that fits 64 bits: its
// type, tag and up to 3 digits in one read.
Result<uint64_t> ReadIdent(ProcessMemory& memory, const Layout& layout,
                           const InterpreterAddresses& at, uint64_t object) {
  const uint64_t size =
      std::max({layout.object_type + 8, layout.long_tag + 8, layout.long_digits + 12});
  uint8_t bytes[64];
  if (size > sizeof(bytes)) return NotA("thread ident", object, "has no layout read here");
  if (!memory.Read(object, bytes, size)) return Unreadable("thread ident", object);
  uint64_t type, tag;
  uint32_t digits[3];
  std::memcpy(&type, bytes + layout.object_type, 8);
  std::memcpy(&tag, bytes + layout.long_tag, 8);
  std::memcpy(digits, bytes + layout.long_digits, 12);
  if (type != at.long_) return NotA("thread ident", object, "has type " + HexAddress(type));
  // lv_tag: the number of 30-bit digits, shifted 3; its low 2 bits the sign
  // (0 positive, 1 zero, 2 negative). 3.11's ob_size: the number, negated
  // for a negative int.
  uint64_t sign = tag & 3, count = tag >> 3;
  if (layout.long_signed_size) {
    sign = int64_t(tag) == 0 ? 1 : int64_t(tag) < 0 ? 2 : 0;
    count = tag;
  }
  if (sign == 1) return uint64_t(0);
  if (sign != 0 || count == 0 || count > 3)
    return NotA("thread ident", object, "is not an ident (tag " + HexAddress(tag) + ")");
  uint64_t value = 0;
  for (uint64_t i = count; i-- > 0;) {
    if (digits[i] >> 30 || (i == 2 && digits[i] >> 4))
      return NotA("thread ident", object, "is not an ident");
    value = (value << 30) | digits[i];
  }
  return value;
}

// threading's module dict, searching sys.modules' entries the cache has
// not searched yet; 0 when threading is not imported.
Result<uint64_t> ThreadingDict(ProcessMemory& memory, const Layout& layout,
                               const InterpreterAddresses& at, ThreadNamesCache* cache) {
  if (cache->threading_dict != 0) return cache->threading_dict;
  uint64_t interp, next;
  if (!ReadValue(memory, at.runtime + layout.runtime_interpreters_head, &interp))
    return Unreadable("_PyRuntime", at.runtime);
  if (interp == 0) return uint64_t(0);  // not yet made, or finalized
  // The main interpreter is the list's last (bounded: a cycle in target
  // memory ends there).
  for (int i = 0; i < 64; ++i, interp = next) {
    if (!ReadValue(memory, interp + layout.interp_next, &next))
      return Unreadable("interpreter state", interp);
    if (next == 0) break;
  }
  uint64_t modules, keys_at, values;
  if (!ReadValue(memory, interp + layout.interp_modules, &modules))
    return Unreadable("interpreter state", interp);
  if (modules == 0) return uint64_t(0);  // not yet made
  RETURN_IF_ERROR(CheckType(memory, layout, modules, at.dict, "sys.modules"));
  if (!ReadValue(memory, modules + layout.dict_keys, &keys_at) ||
      !ReadValue(memory, modules + layout.dict_values, &values)) {
    return Unreadable("sys.modules", modules);
  }
  if (values != 0) return NotA("sys.modules", modules, "is a split dict");
  ASSIGN_OR_RETURN(Keys keys, ReadKeys(memory, keys_at));
  // Entries are appended: a table searched before is searched from where
  // that search ended, a new one (the dict grew) from its start.
  const int64_t from = keys_at == cache->modules_keys ? cache->modules_searched : 0;
  const int64_t to = std::min(keys.entries_used, from + kMaxEntries);
  ASSIGN_OR_RETURN(Found found, FindKey(memory, layout, at, keys, from, to, "threading"));
  cache->modules_keys = keys_at;
  cache->modules_searched = to;
  if (found.index < 0) return uint64_t(0);
  const uint64_t module = found.value;
  RETURN_IF_ERROR(CheckType(memory, layout, module, at.module, "threading module"));
  uint64_t dict;
  if (!ReadValue(memory, module + kModuleDict, &dict))
    return Unreadable("threading module", module);
  RETURN_IF_ERROR(CheckType(memory, layout, dict, at.dict, "threading's dict"));
  cache->threading_dict = dict;
  return dict;
}

}  // namespace

bool ThreadNamesReadable(const Layout& layout, const InterpreterAddresses& at) {
  for (uint64_t offset :
       {layout.interp_modules, layout.type_name, layout.type_flags, layout.type_size,
        layout.dict_keys, layout.dict_values, layout.long_tag, layout.long_digits}) {
    if (offset == Layout::kAbsent) return false;
  }
  return at.dict != 0 && at.long_ != 0 && at.module != 0;
}

Result<std::unordered_map<uint64_t, std::string>> ReadThreadNames(ProcessMemory& memory,
                                                                  const Layout& layout,
                                                                  const InterpreterAddresses& at,
                                                                  ThreadNamesCache* cache) {
  std::unordered_map<uint64_t, std::string> names;
  if (!ThreadNamesReadable(layout, at)) return names;
  ASSIGN_OR_RETURN(uint64_t threading, ThreadingDict(memory, layout, at, cache));
  if (threading == 0) return names;
  Result<uint64_t> active = DictGet(memory, layout, at, threading, "_active");
  if (!active.ok()) {
    cache->threading_dict = 0;  // looked up afresh next time
    return active.status();
  }
  if (*active == 0) return names;
  RETURN_IF_ERROR(CheckType(memory, layout, *active, at.dict, "threading._active"));
  uint64_t keys_at;
  if (!ReadValue(memory, *active + layout.dict_keys, &keys_at))
    return Unreadable("threading._active", *active);
  ASSIGN_OR_RETURN(Keys keys, ReadKeys(memory, keys_at));
  if (keys.entries_used > kMaxThreads)
    return NotA("threading._active", *active, "has more than 4096 threads");
  ASSIGN_OR_RETURN(auto entries, ReadEntries(memory, keys, 0, keys.entries_used));
  InstanceLayouts known;  // Thread and its subclasses
  for (const auto& [key, thread] : entries) {
    if (key == 0 || thread == 0) continue;
    Result<uint64_t> ident = ReadIdent(memory, layout, at, key);
    if (!ident.ok()) return ident.status();
    Result<uint64_t> name = InstanceAttribute(memory, layout, at, thread, "_name", &known);
    if (!name.ok()) return name.status();
    if (*name == 0) continue;
    Result<std::string> text = ReadStr(memory, layout, at, *name, "Thread._name");
    if (text.ok()) names[*ident] = std::move(*text);
  }
  return names;
}

}  // namespace microscope::runtimes::python
