#include <doctest.h>

#include <cstring>
#include <map>
#include <string>

#include "src/runtimes/python/code_reader.h"

using namespace microscope::runtimes::python;

namespace {

// A target's memory as a few hand-made objects at fixed addresses.
struct FakeMemory : ProcessMemory {
  FakeMemory() : ProcessMemory(0) {}
  std::map<uint64_t, std::string> regions;  // start -> bytes
  bool Read(uint64_t address, void* out, size_t size) override {
    for (auto& [start, bytes] : regions) {
      if (address >= start && address - start + size <= bytes.size()) {
        std::memcpy(out, bytes.data() + (address - start), size);
        return true;
      }
    }
    return false;
  }
  void Put(uint64_t address, const void* value, size_t size) {
    for (auto& [start, bytes] : regions) {
      if (address >= start && address - start + size <= bytes.size()) {
        std::memcpy(bytes.data() + (address - start), value, size);
        return;
      }
    }
    FAIL("no region");
  }
  template <typename T>
  void Put(uint64_t address, T value) {
    Put(address, &value, sizeof(T));
  }
};

constexpr InterpreterAddresses kTypes{.code = 0x1000, .str = 0x2000, .bytes = 0x3000};

// A 3.11-laid-out code object at 0x10000, its names and line table after it.
FakeMemory Target(const Layout& l) {
  FakeMemory m;
  m.regions[0x10000] = std::string(0x1000, '\0');
  m.Put<uint64_t>(0x10000 + l.object_type, kTypes.code);
  m.Put<uint64_t>(0x10000 + l.code_filename, 0x10400);
  m.Put<uint64_t>(0x10000 + l.code_qualname, 0x10800);
  m.Put<uint64_t>(0x10000 + l.code_linetable, 0x10c00);
  m.Put<int32_t>(0x10000 + l.code_firstlineno, 7);
  for (auto [at, text] :
       {std::pair<uint64_t, const char*>{0x10400, "app.py"}, {0x10800, "Cls.run"}}) {
    m.Put<uint64_t>(at + l.object_type, kTypes.str);
    m.Put<uint32_t>(at + l.str_state, (1u << 2) | (1u << 5) | (1u << 6));  // 1-byte, compact, ascii
    m.Put<int64_t>(at + l.str_length, int64_t(strlen(text)));
    m.Put(at + l.str_ascii_data, text, strlen(text));
  }
  m.Put<uint64_t>(0x10c00 + l.object_type, kTypes.bytes);
  m.Put<int64_t>(0x10c00 + l.bytes_size, 3);
  m.Put(0x10c00 + l.bytes_data, "\x80\x01\x02", 3);
  return m;
}

}  // namespace

TEST_CASE("Python code reader: names and line table of a proved code object") {
  Layout l = *Layout311(0x030b02f0);
  FakeMemory m = Target(l);
  auto code = ReadCode(m, l, kTypes, 0x10000);
  REQUIRE(code.ok());
  CHECK(code->qualname == "Cls.run");
  CHECK(code->filename == "app.py");
  CHECK(code->first_line == 7);
  CHECK(code->line_table.size() == 3);

  SUBCASE("a UCS-2 name becomes UTF-8") {
    m.Put<uint32_t>(0x10800 + l.str_state, (2u << 2) | (1u << 5));  // 2-byte, compact
    m.Put<int64_t>(0x10800 + l.str_length, 2);
    const uint16_t text[] = {0x394, 0x6f22};  // Delta, a CJK ideograph
    m.Put(0x10800 + l.str_compact_data, text, sizeof(text));
    auto wide = ReadCode(m, l, kTypes, 0x10000);
    REQUIRE(wide.ok());
    CHECK(wide->qualname == "\xce\x94\xe6\xbc\xa2");
  }
  SUBCASE("a legacy (not compact) string is refused") {
    m.Put<uint32_t>(0x10800 + l.str_state, (2u << 2));
    CHECK(ReadCode(m, l, kTypes, 0x10000).status().message().find("not a compact string") !=
          std::string::npos);
  }
  SUBCASE("another type at the address") {
    m.Put<uint64_t>(0x10000 + l.object_type, kTypes.str);
    CHECK(ReadCode(m, l, kTypes, 0x10000).status().message().find("has type") != std::string::npos);
  }
  SUBCASE("a name claiming too many characters") {
    m.Put<int64_t>(0x10800 + l.str_length, int64_t(1) << 40);
    CHECK(ReadCode(m, l, kTypes, 0x10000).status().message().find("claims") != std::string::npos);
  }
  SUBCASE("a line table claiming too many bytes") {
    m.Put<int64_t>(0x10c00 + l.bytes_size, -1);
    CHECK(!ReadCode(m, l, kTypes, 0x10000).ok());
  }
  SUBCASE("unmapped memory") {
    CHECK(ReadCode(m, l, kTypes, 0x90000).status().message().find("not readable") !=
          std::string::npos);
  }
}

TEST_CASE("Python code reader: thread lists, and a cycle in them, end at their bound") {
  Layout l = *Layout311(0x030b02f0);
  FakeMemory m;
  m.regions[0x20000] = std::string(0x2000, '\0');
  InterpreterAddresses at = kTypes;
  at.runtime = 0x20000;
  m.Put<uint64_t>(0x20000 + l.runtime_interpreters_head, 0x20800);
  m.Put<uint64_t>(0x20800 + l.interp_threads_head, 0x21000);
  m.Put<uint64_t>(0x21000 + l.thread_native_id, 41);
  m.Put<uint64_t>(0x21000 + l.thread_next, 0x21400);
  m.Put<uint64_t>(0x21400 + l.thread_native_id, 42);
  auto threads = ListThreads(m, l, at);
  REQUIRE(threads.ok());
  REQUIRE(threads->size() == 2);
  CHECK((*threads)[0].native_id == 41);
  CHECK((*threads)[1].state == 0x21400);
  m.Put<uint64_t>(0x21400 + l.thread_next, 0x21000);  // a cycle
  CHECK(ListThreads(m, l, at, 8).status().message().find("more than 8") != std::string::npos);
}
