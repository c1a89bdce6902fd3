#include <doctest.h>

#include <cstring>
#include <vector>

#include "src/runtimes/python/layout.h"

using namespace microscope::runtimes::python;

namespace {

// The first words of a 3.13 _PyRuntime laid out as 3.13's header says
// (Include/internal/pycore_runtime.h): cookie, version, free_threaded, then
// each group's size and offsets. Word i holds 100 + i, sizes hold 4096.
std::vector<uint8_t> Runtime313(uint64_t version = 0x030d05f0) {
  std::vector<uint64_t> words(73);
  for (size_t i = 0; i < words.size(); ++i) words[i] = 100 + i;
  std::memcpy(&words[0], "xdebugpy", 8);
  words[1] = version;
  for (size_t size_word : {3, 6, 19, 28, 34, 44, 46, 56, 61, 64, 67}) words[size_word] = 4096;
  std::vector<uint8_t> bytes(words.size() * 8);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

}  // namespace

TEST_CASE("Python layout: 3.13's offsets are read where 3.13's header puts them") {
  auto l = LayoutFromDebugOffsets(Runtime313());
  REQUIRE(l.ok());
  CHECK(l->Version() == "3.13.5");
  CHECK(l->runtime_interpreters_head == 105);  // runtime_state: size, finalizing, head
  CHECK(l->interp_threads_head == 109);
  CHECK(l->thread_native_id == 125);
  CHECK(l->frame_executable == 130);
  CHECK(l->frame_owner == 133);
  CHECK(l->code_qualname == 137);
  CHECK(l->code_adaptive == 143);
  CHECK(l->str_ascii_data == 170);
  // What thread names are read by: interpreter_state.imports_modules, the
  // type's flags and its struct's size, the dict's keys, the int's digits.
  CHECK(l->interp_modules == 111);
  CHECK(l->type_flags == 149);
  CHECK(l->type_size == 4096);
  CHECK(l->dict_keys == 157);
  CHECK(l->long_digits == 163);
}

TEST_CASE("Python layout: what cannot be read is refused by name") {
  auto bytes = Runtime313();
  SUBCASE("no cookie") {
    bytes[0] = 'X';
    auto l = LayoutFromDebugOffsets(bytes);
    REQUIRE(!l.ok());
    CHECK(l.status().message().find("cookie") != std::string::npos);
  }
  SUBCASE("a release without a known shape") {
    auto l = LayoutFromDebugOffsets(Runtime313(0x030c04f0));
    REQUIRE(!l.ok());
    CHECK(l.status().message().find("CPython 3.12.4") != std::string::npos);
    CHECK(l.status().message().find(KnownReleases()) != std::string::npos);
  }
  SUBCASE("too short for its shape") {
    bytes.resize(200);
    CHECK(!LayoutFromDebugOffsets(bytes).ok());
  }
  SUBCASE("an offset outside its struct: the shape is not this file's") {
    uint64_t small = 8;
    std::memcpy(bytes.data() + 19 * 8, &small, 8);  // thread_state.size
    auto l = LayoutFromDebugOffsets(bytes);
    REQUIRE(!l.ok());
    CHECK(l.status().message().find("not inside its struct") != std::string::npos);
  }
}

TEST_CASE("Python layout: 3.11 is a table, for 3.11 only") {
  auto l = Layout311(0x030b02f0);
  REQUIRE(l.ok());
  CHECK(l->Version() == "3.11.2");
  CHECK(l->thread_current_frame == Layout::kAbsent);  // behind the _PyCFrame
  CHECK(l->thread_cframe == 56);
  CHECK(l->instr_is_previous);
  CHECK(!Layout311(0x030d05f0).ok());
  CHECK(KnownReleases() == "3.11, 3.12, 3.13, 3.14, 3.15");
}

TEST_CASE("Python layout: byte flips in a runtime image give a layout or a refusal") {
  const auto good = Runtime313();
  uint64_t seed = 12345;
  size_t read = 0, refused = 0;
  for (int round = 0; round < 20000; ++round) {
    auto bytes = good;
    for (int flips = 0; flips < 3; ++flips) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      bytes[(seed >> 33) % bytes.size()] ^= uint8_t(1u << ((seed >> 20) % 8));
    }
    auto l = LayoutFromDebugOffsets(bytes);
    (l.ok() ? read : refused)++;
    if (l.ok()) CHECK(l->thread_native_id < 1u << 20);
  }
  CHECK(read > 0);
  CHECK(refused > 0);
}
