#include <doctest.h>

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "src/runtimes/python/layout.h"
#include "src/runtimes/python/thread_names.h"

using namespace microscope::runtimes::python;

namespace {

// A target's memory: one zeroed region where the objects are laid out.
struct Image : ProcessMemory {
  Image() : ProcessMemory(0), bytes(0x20000, '\0') {}
  static constexpr uint64_t kBase = 0x100000;
  std::string bytes;
  bool Read(uint64_t address, void* out, size_t size) override {
    if (address < kBase || address - kBase + size > bytes.size()) return false;
    std::memcpy(out, bytes.data() + (address - kBase), size);
    return true;
  }
  template <typename T>
  void Put(uint64_t address, T value) {
    REQUIRE(address >= kBase);
    REQUIRE(address - kBase + sizeof(T) <= bytes.size());
    std::memcpy(bytes.data() + (address - kBase), &value, sizeof(T));
  }
};

// Offsets as 3.13's debug offsets give them, where it matters only that
// they are the reader's.
Layout Offsets() {
  Layout l;
  l.minor = 13;
  l.object_type = 8;
  l.runtime_interpreters_head = 40;
  l.interp_next = 8;
  l.interp_modules = 0x30;
  l.str_length = 16;
  l.str_state = 32;
  l.str_ascii_data = 40;
  l.type_name = 24;
  l.type_flags = 168;
  l.type_size = 0x380;
  l.dict_keys = 32;
  l.dict_values = 40;
  l.long_tag = 16;
  l.long_digits = 24;
  return l;
}

constexpr uint64_t B = Image::kBase;
constexpr InterpreterAddresses kAt{
    .runtime = B, .str = B + 0x100, .dict = B + 0x200, .long_ = B + 0x300, .module = B + 0x400};

// A program with threading imported and one Thread, named `name`, of
// ident 0x7f0012345678, keeping its _name in its values: inline (3.13 on),
// or behind the pointer before it (3.11's layout).
struct Program {
  Layout l = Offsets();
  Image m;
  uint64_t next = B + 0x1000;  // where the next object goes
  uint64_t active_keys = 0, thread = 0, thread_type = 0, values = 0;

  uint64_t Take(uint64_t size) {
    const uint64_t at = next;
    next += (size + 15) & ~uint64_t(15);
    return at;
  }
  uint64_t Str(const std::string& text) {
    const uint64_t at = Take(l.str_ascii_data + text.size() + 1);
    m.Put<uint64_t>(at + l.object_type, kAt.str);
    m.Put<int64_t>(at + l.str_length, int64_t(text.size()));
    m.Put<uint32_t>(at + l.str_state, (1u << 2) | (1u << 5) | (1u << 6));
    std::memcpy(m.bytes.data() + (at + l.str_ascii_data - B), text.data(), text.size());
    return at;
  }
  // A keys table of `kind` (0: with hashes) holding `entries`.
  uint64_t Keys(uint8_t kind, const std::vector<std::pair<uint64_t, uint64_t>>& entries) {
    const uint64_t at = Take(32 + 8 + entries.size() * 24);
    m.Put<uint8_t>(at + 8, 3);  // 8 slots
    m.Put<uint8_t>(at + 9, 3);  // of 1-byte indices
    m.Put<uint8_t>(at + 10, kind);
    m.Put<int64_t>(at + 24, int64_t(entries.size()));
    const uint64_t size = kind == 0 ? 24 : 16;
    for (size_t i = 0; i < entries.size(); ++i) {
      const uint64_t e = at + 32 + 8 + i * size + (kind == 0 ? 8 : 0);
      m.Put<uint64_t>(e, entries[i].first);
      m.Put<uint64_t>(e + 8, entries[i].second);
    }
    return at;
  }
  uint64_t Dict(uint64_t keys) {
    const uint64_t at = Take(48);
    m.Put<uint64_t>(at + l.object_type, kAt.dict);
    m.Put<uint64_t>(at + l.dict_keys, keys);
    return at;
  }

  explicit Program(const std::string& name, const Layout& layout = Offsets()) : l(layout) {
    const uint64_t interp = Take(l.interp_modules + 8);
    m.Put<uint64_t>(B + l.runtime_interpreters_head, interp);
    // A Thread: a heap type whose instances keep their values in the order
    // of the type's cached keys: inline, after its 0x40 bytes; or apart.
    thread_type = Take(l.type_size + 60 * 8);
    m.Put<int64_t>(thread_type + l.type_name + 8, 0x40);
    m.Put<uint64_t>(thread_type + l.type_size + 58 * 8,
                    Keys(1, {{Str("_target"), 0}, {Str("_name"), 0}}));
    if (l.values_before != Layout::kAbsent) {
      m.Put<uint64_t>(thread_type + l.type_flags, 1 << 4);  // a managed dict
      thread = Take(l.values_before + 0x40) + l.values_before;
      values = Take(2 * 8);
      m.Put<uint64_t>(thread - l.values_before, values);
      m.Put<uint64_t>(values + 8, Str(name));
    } else {
      m.Put<uint64_t>(thread_type + l.type_flags, 1 << 2);  // inline values
      thread = Take(0x40 + 8 + 2 * 8);
      m.Put<uint8_t>(thread + 0x40, 2);      // capacity
      m.Put<uint8_t>(thread + 0x40 + 3, 1);  // valid
      m.Put<uint64_t>(thread + 0x40 + 8 + 8, Str(name));
    }
    m.Put<uint64_t>(thread + l.object_type, thread_type);
    const uint64_t ident = Take(32);
    m.Put<uint64_t>(ident + l.object_type, kAt.long_);
    m.Put<uint64_t>(ident + l.long_tag, l.long_signed_size ? 2 : 2 << 3);  // 2 digits, positive
    m.Put<uint32_t>(ident + l.long_digits, uint32_t(0x7f0012345678ull & 0x3fffffff));
    m.Put<uint32_t>(ident + l.long_digits + 4, uint32_t(0x7f0012345678ull >> 30));
    active_keys = Keys(0, {{ident, thread}});
    const uint64_t module = Take(32);
    m.Put<uint64_t>(module + l.object_type, kAt.module);
    m.Put<uint64_t>(module + 16,
                    Dict(Keys(1, {{Str("local"), 0}, {Str("_active"), Dict(active_keys)}})));
    m.Put<uint64_t>(interp + l.interp_modules,
                    Dict(Keys(1, {{Str("sys"), 0}, {Str("threading"), module}})));
  }
};

}  // namespace

TEST_CASE("Python thread names: threading's _active, each Thread's _name inline") {
  Program p("worker 1");
  ThreadNamesCache cache;
  auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
  REQUIRE(names.ok());
  CHECK(names->size() == 1);
  CHECK(names->at(0x7f0012345678ull) == "worker 1");
  CHECK(cache.threading_dict != 0);
  // The release and the types decide whether names are read at all.
  Layout old = p.l;
  old.interp_modules = Layout::kAbsent;
  CHECK(!ThreadNamesReadable(old, kAt));
  CHECK(ReadThreadNames(p.m, old, kAt, &cache)->empty());
}

TEST_CASE("Python thread names: a dict materialized holds the name (its inline values invalid)") {
  Program p("before");
  p.m.Put<uint8_t>(p.thread + 0x40 + 3, 0);  // invalid
  p.m.Put<uint64_t>(p.thread_type + p.l.type_flags, (1 << 2) | (1 << 4));
  // The managed dict, 3 words before the object.
  const uint64_t dict = p.Dict(p.Keys(1, {{p.Str("_name"), p.Str("after")}}));
  p.m.Put<uint64_t>(p.thread - 24, dict);
  ThreadNamesCache cache;
  auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
  REQUIRE(names.ok());
  CHECK(names->at(0x7f0012345678ull) == "after");
}

TEST_CASE("Python thread names: no threading yet, then imported; sys.modules searched once") {
  Program p("w");
  uint64_t head;
  REQUIRE(p.m.Read(B + p.l.runtime_interpreters_head, &head, 8));
  uint64_t modules;
  REQUIRE(p.m.Read(head + p.l.interp_modules, &modules, 8));
  uint64_t keys;
  REQUIRE(p.m.Read(modules + p.l.dict_keys, &keys, 8));
  // threading's entry not there yet: one entry in use.
  p.m.Put<int64_t>(keys + 24, 1);
  ThreadNamesCache cache;
  auto none = ReadThreadNames(p.m, p.l, kAt, &cache);
  REQUIRE(none.ok());
  CHECK(none->empty());
  CHECK(cache.modules_searched == 1);
  // Imported: only the new entry is searched.
  p.m.Put<int64_t>(keys + 24, 2);
  auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
  REQUIRE(names.ok());
  CHECK(names->size() == 1);
  CHECK(cache.modules_searched == 2);
}

TEST_CASE("Python thread names: what target memory claims is bounded and proved") {
  SUBCASE("a keys table past its own size is refused") {
    Program p("w");
    p.m.Put<int64_t>(p.active_keys + 24, int64_t(1) << 40);
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(!names.ok());
    CHECK(names.status().message().find("is not a keys table") != std::string::npos);
  }
  SUBCASE("more threads than the bound are refused") {
    Program p("w");
    p.m.Put<uint8_t>(p.active_keys + 8, 13);  // 8192 slots
    p.m.Put<uint8_t>(p.active_keys + 9, 13);
    p.m.Put<int64_t>(p.active_keys + 24, 5000);
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(!names.ok());
    CHECK(names.status().message().find("more than 4096 threads") != std::string::npos);
  }
  SUBCASE("a negative ident is not an ident") {
    Program p("w");
    uint64_t entry_key;
    REQUIRE(p.m.Read(p.active_keys + 32 + 8 + 8, &entry_key, 8));
    p.m.Put<uint64_t>(entry_key + p.l.long_tag, (2 << 3) | 2);
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(!names.ok());
    CHECK(names.status().message().find("is not an ident") != std::string::npos);
  }
  SUBCASE("a name that is not a str is left out") {
    Program p("w");
    p.m.Put<uint64_t>(p.thread + 0x40 + 16, p.thread);  // the Thread itself
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(names.ok());
    CHECK(names->empty());
  }
  SUBCASE("a cycle of interpreters ends at the bound") {
    Program p("w");
    uint64_t head;
    REQUIRE(p.m.Read(B + p.l.runtime_interpreters_head, &head, 8));
    p.m.Put<uint64_t>(head + p.l.interp_next, head);
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(names.ok());
    CHECK(names->size() == 1);
  }
  SUBCASE("sys.modules of another type is refused") {
    Program p("w");
    uint64_t head, modules;
    REQUIRE(p.m.Read(B + p.l.runtime_interpreters_head, &head, 8));
    REQUIRE(p.m.Read(head + p.l.interp_modules, &modules, 8));
    p.m.Put<uint64_t>(modules + p.l.object_type, kAt.str);
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(!names.ok());
    CHECK(names.status().message().find("sys.modules at ") != std::string::npos);
  }
}

TEST_CASE("Python thread names: 3.11's values behind their pointer, its dict, its ints") {
  auto l311 = Layout311(0x030b02f0);
  REQUIRE(l311.ok());
  CHECK(ThreadNamesReadable(*l311, kAt));
  SUBCASE("the name among the values") {
    Program p("worker 1", *l311);
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(names.ok());
    CHECK(names->size() == 1);
    CHECK(names->at(0x7f0012345678ull) == "worker 1");
  }
  SUBCASE("values given up for a dict: the dict holds the name") {
    Program p("before", *l311);
    p.m.Put<uint64_t>(p.thread - 32, 0);
    p.m.Put<uint64_t>(p.thread - 24, p.Dict(p.Keys(1, {{p.Str("_name"), p.Str("after")}})));
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(names.ok());
    CHECK(names->at(0x7f0012345678ull) == "after");
  }
  SUBCASE("a split dict's values start at their pointer") {
    Program p("w", *l311);
    p.m.Put<uint64_t>(p.thread - 32, 0);
    const uint64_t values = p.Take(16);
    p.m.Put<uint64_t>(values + 8, p.Str("split"));
    const uint64_t dict = p.Dict(p.Keys(2, {{p.Str("_target"), 0}, {p.Str("_name"), 0}}));
    p.m.Put<uint64_t>(dict + p.l.dict_values, values);
    p.m.Put<uint64_t>(p.thread - 24, dict);
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(names.ok());
    CHECK(names->at(0x7f0012345678ull) == "split");
  }
  SUBCASE("a negative ob_size is not an ident") {
    Program p("w", *l311);
    uint64_t entry_key;
    REQUIRE(p.m.Read(p.active_keys + 32 + 8 + 8, &entry_key, 8));
    p.m.Put<int64_t>(entry_key + p.l.long_tag, -2);
    ThreadNamesCache cache;
    auto names = ReadThreadNames(p.m, p.l, kAt, &cache);
    REQUIRE(!names.ok());
    CHECK(names.status().message().find("is not an ident") != std::string::npos);
  }
  // 3.12: no sys.modules offset that an interpreter here could check.
  auto l312 = Layout312(0x030c05f0);
  REQUIRE(l312.ok());
  CHECK(!ThreadNamesReadable(*l312, kAt));
}
