#include <doctest.h>

#include <cstring>
#include <map>
#include <string>

#include "src/runtimes/python/code_reader.h"
#include "src/runtimes/python/walker.h"

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
  // The three bytes, decoded: a one-unit entry on the first line, then a
  // byte that starts no entry.
  CHECK(code->lines.Find(0).kind == LineLookup::kLine);
  CHECK(code->lines.Find(0).line == 7);
  CHECK(code->lines.Find(1).kind == LineLookup::kMalformed);

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

// CPython 3.12 cannot run here (no Debian suite has it): memory laid out as
// its headers lay it out stands for a live 3.12.
TEST_CASE("Python 3.12: a memory image laid out by its headers is read and walkable") {
  auto layout = Layout312(0x030c05f0);
  REQUIRE(layout.ok());
  const Layout& l = *layout;
  CHECK(l.Version() == "3.12.5");
  CHECK(!Layout312(0x030b02f0).ok());
  // Objects where 3.12 puts their fields (offsetof over its headers).
  CHECK(l.interp_threads_head == 72);
  CHECK(l.thread_native_id == 144);
  CHECK(l.code_firstlineno == 68);
  CHECK(l.code_adaptive == 192);
  CHECK(l.str_ascii_data == 40);

  FakeMemory m = Target(l);  // a code object at 0x10000, names at 0x10400 and 0x10800
  auto code = ReadCode(m, l, kTypes, 0x10000);
  REQUIRE(code.ok());
  CHECK(code->qualname == "Cls.run");
  CHECK(code->filename == "app.py");
  CHECK(code->first_line == 7);
  CHECK(code->qualname_object == 0x10800);
  // A UCS-2 name: its code points after PyCompactUnicodeObject (56 bytes).
  m.Put<uint32_t>(0x10800 + 32, (2u << 2) | (1u << 5));
  m.Put<int64_t>(0x10800 + 16, 1);
  m.Put<uint16_t>(0x10800 + 56, 0x394);
  CHECK(ReadCode(m, l, kTypes, 0x10000)->qualname == "\xce\x94");

  // The runtime, its interpreter and two threads, the first with its frames
  // behind its _PyCFrame.
  m.regions[0x20000] = std::string(0x2000, '\0');
  InterpreterAddresses at = kTypes;
  at.runtime = 0x20000;
  m.Put<uint64_t>(0x20000 + 40, 0x20800);  // interpreters.head
  m.Put<uint64_t>(0x20800 + 72, 0x21000);  // threads.head
  m.Put<uint64_t>(0x21000 + 144, 4242);    // native_thread_id
  m.Put<uint64_t>(0x21000 + 8, 0x21400);   // next
  m.Put<uint64_t>(0x21400 + 144, 4243);
  m.Put<uint64_t>(0x21000 + 56, 0x21800);  // cframe
  m.Put<uint64_t>(0x21800 + 0, 0x21c00);   // cframe->current_frame
  auto threads = ListThreads(m, l, at);
  REQUIRE(threads.ok());
  REQUIRE(threads->size() == 2);
  CHECK((*threads)[0].native_id == 4242);
  CHECK((*threads)[1].state == 0x21400);
  uint64_t cframe = 0, frame = 0;
  REQUIRE(m.Read(threads->front().state + l.thread_cframe, &cframe, 8));
  REQUIRE(m.Read(cframe + l.cframe_current_frame, &frame, 8));
  CHECK(frame == 0x21c00);
  // Its frames: one running the code object, then the activation's shim
  // (owned by the C stack), then one more frame of an outer activation.
  m.Put<uint64_t>(0x21c00 + l.frame_executable, 0x10000);
  m.Put<uint64_t>(0x21c00 + l.frame_previous, 0x21d00);
  m.Put<uint8_t>(0x21d00 + l.frame_owner, 3);
  m.Put<uint64_t>(0x21d00 + l.frame_previous, 0x21e00);
  m.Put<uint64_t>(0x21e00 + l.frame_executable, 0x10000 | 1);  // a tag bit is not an address bit
  auto codes = ReadFrameCodes(m, l, threads->front().state);
  REQUIRE(codes.ok());
  REQUIRE(codes->size() == 2);
  CHECK((*codes)[0].code == 0x10000);
  CHECK((*codes)[0].qualname == 0x10800);
  CHECK((*codes)[0].filename == 0x10400);
  CHECK((*codes)[0].first_line == 7);
  CHECK((*codes)[1].code == 0x10000);
  m.Put<uint64_t>(0x21e00 + l.frame_previous, 0x21c00);  // a cycle ends at the bound
  CHECK(ReadFrameCodes(m, l, threads->front().state, 16)->size() == 16);

  // What the BPF walker is given for it: through the _PyCFrame, the shim
  // owned by the C stack (3) ending each activation, prev_instr, every
  // field inside the chunks the walk reads.
  auto offsets = ProcessOffsets(l, {.runtime = at.runtime});
  REQUIRE(offsets.ok());
  CHECK(offsets->thread_current_frame == MICROSCOPE_PY_ABSENT);
  CHECK(offsets->thread_cframe == 56);
  CHECK(offsets->frame_owner == 70);
  CHECK(offsets->owner_cstack == 3);
  CHECK(offsets->owner_interpreter == 0xff);
  CHECK(offsets->frame_is_entry == MICROSCOPE_PY_ABSENT);
  CHECK(offsets->code_lo == 68);
  CHECK(offsets->code_qualname - offsets->code_lo + 8 <= MICROSCOPE_PY_CHUNK);
  Layout far = l;
  far.frame_owner = 200;
  CHECK(ProcessOffsets(far, {}).status().message().find("does not read") != std::string::npos);
}

TEST_CASE("Python walker: frame owners that run no Python, per release") {
  CHECK(NonPythonOwners(11) == std::pair<uint8_t, uint8_t>{0xff, 0xff});  // is_entry instead
  CHECK(NonPythonOwners(12) == std::pair<uint8_t, uint8_t>{3, 0xff});
  CHECK(NonPythonOwners(13) == std::pair<uint8_t, uint8_t>{3, 0xff});
  CHECK(NonPythonOwners(14) == std::pair<uint8_t, uint8_t>{4, 3});  // INTERPRETER inserted as 3
  CHECK(ProcessOffsets(*Layout311(0x030b02f0), {}).ok());
}
