#include <doctest.h>
#include <linux/types.h>

#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "src/record/splicer.h"
#include "src/runtimes/node/code_reader.h"
#include "src/runtimes/node/function_reader.h"
#include "src/runtimes/node/heap_reader.h"
#include "src/runtimes/node/line_table.h"
#include "src/runtimes/node/node.h"
#include "src/runtimes/node/source_map.h"
#include "src/runtimes/node/walk.h"
#include "tests/unit/runtimes/walk_bytes.h"

using namespace microscope;
using namespace microscope::runtimes::node;

namespace {

std::vector<uint8_t> RawWalkBytes(uint32_t pid, uint32_t tid, uint8_t status,
                                  const std::vector<v8_frame>& frames) {
  return testing::WalkRecordBytes(MICROSCOPE_RUNTIME_NODE, pid, tid, status, frames);
}

constexpr uint8_t kJit = record::code_tags::kAnonymousCode;  // the tests' builtins: tag 3

v8_frame RawFrame(uint64_t fp) {
  return {fp, fp + 1, fp + 2, fp + 3, fp + 4, 0, 0};
}

// Frame ids stand for names: natives are 0..99, JavaScript frames 1000 +
// their frame pointer / 16, markers 9999. Every test splices with the same
// scratch, as a source does: nothing of one stack may reach the next.
std::vector<capture::FrameId> Spliced(const V8Walk& walk, std::vector<capture::FrameId> frames,
                                      std::vector<uint8_t> tags, std::vector<uint64_t> sps,
                                      std::string* reason = nullptr) {
  V8SpliceHooks hooks;
  hooks.frame = [](const V8Frame& f, bool, capture::FrameId, std::vector<capture::FrameId>* out) {
    // A frame at 0x1x0 stands for optimized code that inlined two
    // functions there (500 + fp / 16, innermost, then 400 + fp / 16).
    if ((f.fp & 0xf00) == 0x100) {
      out->push_back(capture::FrameId(500 + f.fp / 16));
      out->push_back(capture::FrameId(400 + f.fp / 16));
    }
    out->push_back(capture::FrameId(1000 + f.fp / 16));
  };
  hooks.marker = [&](const std::string& why) {
    if (reason) *reason = why;
    return capture::FrameId(9999);
  };
  static V8SpliceScratch scratch;
  SpliceV8Walk(walk, &frames, tags, sps, {3}, hooks, &scratch);
  return frames;
}

// The outermost function's position at pc (FunctionsAt's last).
std::optional<int64_t> Outer(const CompiledCode& code, uint64_t pc, bool return_address) {
  std::vector<InlinedAt> chain;
  if (!FunctionsAt(code, pc, return_address, &chain) || chain.back().position < 0)
    return std::nullopt;
  return chain.back().position;
}

}  // namespace

TEST_CASE("V8 walks: records are read back, and malformed ones refused with the reason") {
  auto bytes = RawWalkBytes(10, 11, MICROSCOPE_V8_WALKED, {RawFrame(0x1000), RawFrame(0x2000)});
  CHECK(IsV8Walk(bytes));
  Result<V8Walk> w = ParseV8Walk(bytes);
  REQUIRE(w.ok());
  CHECK(w->tid == 11);
  REQUIRE(w->frames.size() == 2);
  CHECK(w->frames[1].fp == 0x2000);
  CHECK(w->frames[1].script == 0x2004);
  CHECK_FALSE(w->interpreter_offset.has_value());
  // The interpreter's registers: r9 in context[0] when the flag says r12
  // was the innermost frame's bytecode array.
  auto with_registers = bytes;
  walk_header h;
  std::memcpy(&h, with_registers.data(), sizeof(h));
  h.flags = MICROSCOPE_V8_INTERPRETER;
  h.context[0] = 0x35;
  std::memcpy(with_registers.data(), &h, sizeof(h));
  Result<V8Walk> r = ParseV8Walk(with_registers);
  REQUIRE(r.ok());
  CHECK(r->interpreter_offset == std::optional<uint64_t>(0x35));
  h.flags = 0;
  std::memcpy(with_registers.data(), &h, sizeof(h));
  REQUIRE(ParseV8Walk(with_registers, &*r).ok());  // reused: nothing of the last walk stays
  CHECK_FALSE(r->interpreter_offset.has_value());
  auto cut = bytes;
  cut.resize(cut.size() - 1);
  CHECK(ParseV8Walk(cut).status().message().find("cannot hold its 2 frames") != std::string::npos);
  auto other = bytes;
  other[0] ^= 1;
  CHECK_FALSE(IsV8Walk(other));
  CHECK_FALSE(ParseV8Walk(other).ok());
  CHECK_FALSE(ParseV8Walk(std::span<const uint8_t>(bytes.data(), 8)).ok());
  // Random bytes never crash the reader.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> junk(rng() % 200);
    for (uint8_t& b : junk) b = uint8_t(rng());
    if (junk.size() >= 4 && i % 2 == 0) std::memcpy(junk.data(), &bytes[0], 4);
    (void)ParseV8Walk(junk);
  }
}

TEST_CASE(
    "V8 splicing: generated code is replaced, the interpreter's entry keeps its function "
    "leafward") {
  // Native stack, leaf first: a kernel frame (no sp), JIT code of f (sp
  // 0x100), the interpreter entry running g (0x200), node's C++ (0x300).
  V8Walk walk;
  walk.frames = {{0x180}, {0x2a0}};  // f's frame pointer, g's
  auto out = Spliced(walk, {1, 2, 3, 4}, {0, kJit, 3, 0}, {0, 0x100, 0x200, 0x300});
  // f replaces its JIT frame, with the two functions its code inlined
  // there leafward of it; g goes leafward of the entry that runs it.
  CHECK(out ==
        std::vector<capture::FrameId>{1, 500 + 0x18, 400 + 0x18, 1000 + 0x18, 1000 + 0x2a, 3, 4});
}

TEST_CASE("V8 splicing: a frame placed leafward of native code keeps the functions it inlined") {
  V8Walk walk;
  walk.frames = {{0x1c0}, {0x2a0}};
  // memcpy holds f's frame pointer (f's code inlined two calls there).
  auto out = Spliced(walk, {1, 2, 3}, {0, 0, 0}, {0, 0x1c0 - 8, 0x300});
  CHECK(out ==
        std::vector<capture::FrameId>{1, 2, 500 + 0x1c, 400 + 0x1c, 1000 + 0x1c, 1000 + 0x2a, 3});
}

TEST_CASE("V8 splicing: each builtin tag given is an interpreter entry further out") {
  // A bytecode handler (tag 4) that called the runtime: the frame goes
  // leafward of it, as of any builtin.
  V8Walk walk;
  walk.frames = {{0x2a0}};
  V8SpliceHooks hooks;
  hooks.frame = [](const V8Frame& f, bool, capture::FrameId, std::vector<capture::FrameId>* out) {
    out->push_back(capture::FrameId(1000 + f.fp / 16));
  };
  hooks.marker = [](const std::string&) { return capture::FrameId(9999); };
  std::vector<capture::FrameId> frames{2, 3, 4};
  SpliceV8Walk(walk, &frames, std::vector<uint8_t>{0, 4, 0},
               std::vector<uint64_t>{0x100, 0x200, 0x300}, {3, 4}, hooks);
  CHECK(frames == std::vector<capture::FrameId>{2, 1000 + 0x2a, 3, 4});
}

TEST_CASE("V8 splicing: a builtin at the leaf runs for the function, which goes callerward") {
  V8Walk walk;
  walk.frames = {{0x140}};
  // The leaf (a bytecode handler or frameless builtin) holds f's frame pointer.
  auto out = Spliced(walk, {2, 4}, {3, 0}, {0x100, 0x300});
  CHECK(out == std::vector<capture::FrameId>{2, 500 + 0x14, 400 + 0x14, 1000 + 0x14, 4});
}

TEST_CASE("V8 splicing: native code holding a frame pointer runs for the function") {
  V8Walk walk;
  walk.frames = {{0x240}};
  // memcpy (untagged, further out than a kernel frame) holds f's frame
  // pointer: f called it, so f goes callerward; the native frame stays.
  auto out = Spliced(walk, {1, 2, 3}, {0, 0, 0}, {0, 0x200, 0x300});
  CHECK(out == std::vector<capture::FrameId>{1, 2, 1000 + 0x24, 3});
}

TEST_CASE("V8 splicing: frames beyond the native stack follow it, with the reason") {
  V8Walk walk;
  walk.status = MICROSCOPE_V8_TRUNCATED;
  walk.bound = 2;
  walk.frames = {{0x180}, {0x900}};
  std::string reason;
  auto out = Spliced(walk, {2, 4}, {kJit, 0}, {0x100, 0x300}, &reason);
  CHECK(out ==
        std::vector<capture::FrameId>{500 + 0x18, 400 + 0x18, 1000 + 0x18, 4, 1000 + 0x90, 9999});
  CHECK(reason.find("1 of 2 JavaScript frames not found in the native stack") == 0);
  CHECK(reason.find("cut at 2 JavaScript frames (record --runtime-frames)") != std::string::npos);
  walk.bound = 1024;  // fewer frames than the bound: the frame pointers ran out
  Spliced(walk, {2, 4}, {kJit, 0}, {0x100, 0x300}, &reason);
  CHECK(reason.find("cut after 2048 frame pointers") != std::string::npos);
}

namespace {

// V8's position table encoding: zigzag numbers in 7-bit varints.
uint64_t zigzag(int64_t v) {
  return uint64_t((v << 1) ^ (v >> 63));
}
void varint(std::vector<uint8_t>* out, uint64_t v) {
  do {
    out->push_back(uint8_t((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
    v >>= 7;
  } while (v != 0);
}

}  // namespace

TEST_CASE("V8 position tables: both encodings, and cut tables refused") {
  // Entries (code offset, script offset): (0, 12), (5, 40), (11, 41):
  // V8 keeps code deltas from -1 and raw positions (offset + 1) << 1.
  const int64_t codes[] = {0, 5, 11}, offsets[] = {12, 40, 41};
  std::vector<uint8_t> old_table, new_table;
  int64_t code = -1, raw = 0;
  for (int i = 0; i < 3; ++i) {
    const int64_t delta = codes[i] - code, pos = (offsets[i] + 1) << 1;
    varint(&old_table, zigzag(i == 1 ? -(delta + 1) : delta));  // an expression: negative
    varint(&new_table, uint64_t(delta) << 2 | (i == 1 ? 0 : 1));
    varint(&old_table, zigzag(pos - raw));
    varint(&new_table, zigzag(pos - raw));
    code = codes[i];
    raw = pos;
  }
  for (bool flags : {false, true}) {
    Result<std::vector<PositionEntry>> e =
        DecodePositionTable(flags ? new_table : old_table, flags);
    REQUIRE(e.ok());
    REQUIRE(e->size() == 3);
    CHECK((*e)[1].code_offset == 5);
    CHECK((*e)[1].position == 40);
    CHECK(PositionAt(*e, 4) == 12);
    CHECK(PositionAt(*e, 5) == 40);
    CHECK(PositionAt(*e, 100) == 41);
    CHECK_FALSE(PositionAt(*e, -2).has_value());
  }
  std::vector<uint8_t> cut = old_table;
  cut.back() |= 0x80;
  CHECK(DecodePositionTable(cut, false).status().message().find("varint cut") != std::string::npos);
  // Found by fuzz_node: a 9-byte varint whose sum overflowed (undefined
  // behaviour); refused as out of range.
  const std::vector<uint8_t> huge = {0xb5, 0x13, 0x13, 0x13, 0x3b, 0x13, 0x13, 0x13, 0x13, 0x13,
                                     0x0a, 0x13, 0x13, 0x13, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                     0xff, 0xff, 0xff, 0x13, 0x13, 0x0a, 0x0e, 0x93};
  for (bool flags : {false, true}) {
    Result<std::vector<PositionEntry>> e = DecodePositionTable(huge, flags);
    CHECK_FALSE(e.ok());
    CHECK(e.status().message().find("out of range") != std::string::npos);
  }
}

TEST_CASE("Optimized code's positions: inlining ids kept, external positions skipped") {
  // At code offset 4: script offset 20 in the call inlined as 0; at 10 a
  // position of V8's own code (external); at 20: script offset 30.
  const int64_t a = ((20 + 1) << 1) | (int64_t(0 + 1) << 31), b = a + 1, c = (30 + 1) << 1;
  std::vector<uint8_t> table;
  varint(&table, zigzag(5));
  varint(&table, zigzag(a));
  varint(&table, zigzag(6));
  varint(&table, zigzag(b - a));
  varint(&table, zigzag(10));
  varint(&table, zigzag(c - b));
  Result<std::vector<PositionEntry>> e = DecodePositionTable(table, false);
  REQUIRE(e.ok());
  REQUIRE(e->size() == 2);
  CHECK((*e)[0].code_offset == 4);
  CHECK((*e)[0].position == 20);
  CHECK((*e)[0].inlining == 0);
  CHECK((*e)[1].code_offset == 20);
  CHECK((*e)[1].inlining == -1);
  CompiledCode code;
  code.start = 0x1000;
  code.size = 100;
  code.optimized = true;
  code.positions = *e;
  code.inlined = {{7, -1, 0xa1}};  // the inlined call sits at offset 7 of the frame's function
  CHECK(Outer(code, 0x1005, false) == 7);
  // The functions there, innermost first: the inlined one (at 20 in it),
  // then the frame's own at its call.
  std::vector<InlinedAt> chain;
  REQUIRE(FunctionsAt(code, 0x1005, false, &chain));
  REQUIRE(chain.size() == 2);
  CHECK(chain[0].function == &code.inlined[0]);
  CHECK(chain[0].position == 20);
  CHECK(chain[1].function == nullptr);
  CHECK(chain[1].position == 7);
  REQUIRE(FunctionsAt(code, 0x1000 + 21, true, &chain));
  CHECK(chain.size() == 1);  // no inlining there
  // Two levels: g inlined into f at 7, h inlined into g at 3.
  code.inlined = {{7, -1, 0xa1}, {3, 0, 0xb1}};
  code.positions[0].inlining = 1;
  REQUIRE(FunctionsAt(code, 0x1005, false, &chain));
  REQUIRE(chain.size() == 3);
  CHECK((chain[0].function->shared == 0xb1 && chain[0].position == 20));
  CHECK((chain[1].function->shared == 0xa1 && chain[1].position == 3));
  CHECK((chain[2].function == nullptr && chain[2].position == 7));
  code.positions[0].inlining = 0;
  code.inlined = {{7, -1, 0xa1}};
  CHECK(Outer(code, 0x1000 + 11, true) == 7);  // 10 is external: still the call at 4
  CHECK(Outer(code, 0x1000 + 21, true) == 30);
  CHECK(Outer(code, 0x1000 + 20, true) == 7);  // a return address: the instruction before
  CHECK_FALSE(Outer(code, 0x1003, false).has_value());
  code.inlined = {{7, 0}};  // a cycle in untrusted ids ends
  CHECK_FALSE(Outer(code, 0x1005, false).has_value());
  CHECK_FALSE(FunctionsAt(code, 0x1005, false, &chain));
  CHECK(chain.empty());
  code.inlined = {};  // an id past the inlined calls
  CHECK_FALSE(Outer(code, 0x1005, false).has_value());
}

TEST_CASE("Baseline code: the bytecode whose code holds a pc") {
  CompiledCode code;
  code.start = 0x1000;
  code.size = 64;
  code.baseline = true;
  // The prologue's code ends at 10, bytecode 0's at 20, bytecode 3's at 35.
  code.bytecode_ends = {{10, -1}, {20, 0}, {35, 3}};
  CHECK_FALSE(BaselineOffset(code, 0x1000 + 10, true).has_value());  // returns into the prologue
  CHECK(BaselineOffset(code, 0x1000 + 15, true) == 0);
  CHECK(BaselineOffset(code, 0x1000 + 20, true) == 0);   // a call that ends bytecode 0's code
  CHECK(BaselineOffset(code, 0x1000 + 20, false) == 3);  // the instruction at 20 is bytecode 3's
  CHECK_FALSE(BaselineOffset(code, 0x1000 + 40, true).has_value());
  CHECK_FALSE(BaselineOffset(code, 0x0fff, false).has_value());
}

TEST_CASE("Source lines: 1-based, by UTF-16 offset") {
  SourceLines lines(u"a\nbc\n\nd");
  CHECK(lines.LineOf(0) == 1);
  CHECK(lines.LineOf(2) == 2);
  CHECK(lines.LineOf(4) == 2);
  CHECK(lines.LineOf(5) == 3);
  CHECK(lines.LineOf(6) == 4);
}

namespace {

// Target memory from a map of 8-byte words.
struct FakeMemory : record::ProcessMemory {
  FakeMemory() : ProcessMemory(0) {}
  std::map<uint64_t, uint8_t> bytes;
  void Put(uint64_t at, const void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) bytes[at + i] = static_cast<const uint8_t*>(data)[i];
  }
  void Word(uint64_t at, uint64_t v) { Put(at, &v, 8); }
  bool Read(uint64_t address, void* out, size_t size) override {
    for (size_t i = 0; i < size; ++i) {
      auto it = bytes.find(address + i);
      if (it == bytes.end()) return false;
      static_cast<uint8_t*>(out)[i] = it->second;
    }
    return true;
  }
};

V8Layout TestLayout() {
  V8Layout l;
  l.heap_object_tag = 1;
  l.heap_object_tag_mask = 3;
  l.smi_shift_size = 31;
  l.smi_tag_mask = 1;
  l.heap_object_map = 0;
  l.map_instance_type = 12;
  l.shared_name = 16;
  l.shared_script = 32;
  l.script_name = 16;
  l.script_source = 8;
  l.string_length = 12;
  l.seq_one_byte_chars = 16;
  l.seq_two_byte_chars = 16;
  l.cons_first = 16;
  l.cons_second = 24;
  l.sliced_parent = 16;
  l.sliced_offset = 24;
  l.thin_actual = 16;
  l.is_not_string_mask = 0x80;
  l.string_tag = 0;
  l.string_representation_mask = 7;
  l.seq_string_tag = 0;
  l.cons_string_tag = 1;
  l.sliced_string_tag = 3;
  l.thin_string_tag = 5;
  l.external_string_tag = 2;
  l.external_resource = 16;
  l.string_encoding_mask = 8;
  l.one_byte_string_tag = 8;
  l.type_shared_function_info = 200;
  l.type_script = 201;
  l.type_scope_info = 202;
  l.scope_info_context_locals = 2;
  l.scope_info_first_vars = 3;
  return l;
}

// Objects at fixed addresses (tagged: +1), each with a map of its type.
struct Heap {
  FakeMemory memory;
  uint64_t next_map = 0x9000;
  uint64_t Object(uint64_t at, uint16_t type) {
    const uint64_t map = next_map += 0x40;  // its address; tagged: +1
    memory.Word(map, 0);
    memory.Put(map + 12, &type, 2);
    memory.Word(at, map + 1);
    return at + 1;
  }
  uint64_t String(uint64_t at, const std::string& text) {
    const uint64_t s = Object(at, 8);  // sequential, one byte
    const int32_t n = int32_t(text.size());
    memory.Put(at + 12, &n, 4);
    memory.Put(at + 16, text.data(), text.size());
    return s;
  }
};

uint64_t Smi(int64_t v) {
  return uint64_t(v) << 32;
}

}  // namespace

TEST_CASE("V8 functions: named from a string or a ScopeInfo, proved against the walk") {
  V8Layout l = TestLayout();
  Heap h;
  const uint64_t script = h.Object(0x3000, 201);
  const uint64_t url = h.String(0x3100, "/app/main.js");
  const uint64_t source = h.String(0x3200, "// x\nfunction run() {}\n");
  h.memory.Word(0x3000 + 16, url);
  h.memory.Word(0x3000 + 8, source);
  const uint64_t name = h.String(0x4000, "run");
  const uint64_t shared = h.Object(0x5000, 200);
  h.memory.Word(0x5000 + 32, script);
  h.memory.Word(0x5000 + 16, name);
  HeapReader heap(&h.memory, &l);
  Result<FunctionInfo> f = ReadFunction(heap, l, shared, name, script);
  REQUIRE(f.ok());
  CHECK(f->name == "run");
  CHECK(f->script == "/app/main.js");
  CHECK(f->start == -1);
  // The SFI compiled since the sample: a ScopeInfo (V8 11-12 layout: Smi
  // flags, no locals, FUNCTION scope, a name slot, an inferred name, then
  // the positions) keeps the same name string: still proved.
  const uint64_t scope = h.Object(0x6000, 202);
  const uint32_t flags = 2 | (3u << 12) | (1u << 14);
  h.memory.Word(0x6000 + 8, Smi(flags));
  h.memory.Word(0x6000 + 24, Smi(0));
  h.memory.Word(0x6000 + 32, name);
  h.memory.Word(0x6000 + 40, Smi(-1));
  h.memory.Word(0x6000 + 48, 0);  // inferred: not a string
  h.memory.Word(0x6000 + 56, Smi(14));
  h.memory.Word(0x5000 + 16, scope);
  f = ReadFunction(heap, l, shared, name, script);
  REQUIRE(f.ok());
  CHECK(f->name == "run");
  CHECK(f->start == 14);
  SourceLines lines(u"// x\nfunction run() {}\n");
  CHECK(lines.LineOf(f->start) == 2);
  // Another function's memory now: refused as moved.
  h.memory.Word(0x6000 + 32, h.String(0x4100, "other"));
  f = ReadFunction(heap, l, shared, name, script);
  CHECK(f.status().code() == StatusCode::kNotFound);
  // No longer a SharedFunctionInfo at all.
  h.Object(0x5000, 77);
  CHECK(ReadFunction(heap, l, shared, name, script).status().code() == StatusCode::kNotFound);
}

TEST_CASE("V8 strings: cons strings joined, two-byte text decoded, loops bounded") {
  V8Layout l = TestLayout();
  Heap h;
  const uint64_t a = h.String(0x1000, "Module.");
  const uint64_t b = h.Object(0x1100, 0);  // sequential, two byte
  const char16_t text[] = u"h\u00e9llo";
  const int32_t n = 5;
  h.memory.Put(0x1100 + 12, &n, 4);
  h.memory.Put(0x1100 + 16, text, 10);
  const uint64_t cons = h.Object(0x1200, 9);  // cons, one byte
  h.memory.Word(0x1200 + 16, a);
  h.memory.Word(0x1200 + 24, b);
  HeapReader heap(&h.memory, &l);
  Result<std::string> s = heap.ReadString(cons);
  REQUIRE(s.ok());
  CHECK(*s == "Module.h\xc3\xa9llo");
  // A cons string that holds itself.
  h.memory.Word(0x1200 + 16, cons);
  CHECK(heap.ReadString(cons).status().message().find("nests deeper") != std::string::npos);
  // Not a string.
  CHECK_FALSE(heap.ReadString(h.Object(0x1300, 0x90)).ok());
  // A sliced string far into its parent is refused, not read from the
  // parent's start.
  const uint64_t sliced = h.Object(0x1400, 8 | 3);  // sliced, one byte
  const int32_t len = 3;
  h.memory.Put(0x1400 + 12, &len, 4);
  h.memory.Word(0x1400 + 16, a);
  h.memory.Word(0x1400 + 24, Smi(int64_t(1) << 30));
  CHECK(heap.ReadString(sliced).status().message().find("units into its parent") !=
        std::string::npos);
  h.memory.Word(0x1400 + 24, Smi(2));
  Result<std::string> dul = heap.ReadString(sliced);
  CHECK_MESSAGE(dul.ok(), dul.status().message());
  CHECK((dul.ok() && *dul == "dul"));
}

TEST_CASE("V8 strings: external ones read through their cached data pointer, uncached refused") {
  V8Layout l = TestLayout();
  Heap h;
  // Node 26's scripts: the characters live in the embedder's memory, the
  // pointer V8 caches is 8 bytes after the resource.
  const std::string text = "function run() {}\n";
  h.memory.Put(0x7000, text.data(), text.size());
  const uint64_t ext = h.Object(0x1500, 8 | 2);  // external, one byte
  const int32_t n = int32_t(text.size());
  h.memory.Put(0x1500 + 12, &n, 4);
  h.memory.Word(0x1500 + 16, 0x6f00);  // the resource (a C++ object)
  h.memory.Word(0x1500 + 24, 0x7000);
  HeapReader heap(&h.memory, &l);
  Result<std::string> s = heap.ReadString(ext);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(*s == text);
  // Bounded by what was asked, not by the length the string claims.
  const int32_t huge = int32_t(1) << 30;
  h.memory.Put(0x1500 + 12, &huge, 4);
  Result<std::u16string> units = heap.ReadCodeUnits(ext, 8);
  REQUIRE(units.ok());
  CHECK(units->size() == 8);
  // Characters the pointer does not reach are an error naming it.
  h.memory.Put(0x1500 + 12, &n, 4);
  h.memory.Word(0x1500 + 24, 0x123456000);
  CHECK(heap.ReadString(ext).status().message().find("0x123456000") != std::string::npos);
  // Uncached: no pointer to follow.
  const uint64_t uncached = h.Object(0x1600, 8 | 2 | 16);
  h.memory.Put(0x1600 + 12, &n, 4);
  CHECK(heap.ReadString(uncached).status().message().find("uncached") != std::string::npos);
}

TEST_CASE("Source maps: segments found by line and column, names and sources resolved") {
  // Generated line 0: column 0 maps to a.js 0:0; column 9 to a.js 2:4
  // named "hot"; column 20 to nothing. Line 1: column 2 to b.js 5:0.
  const std::string json = R"({"version":3,"sourceRoot":"src","sources":["a.js","../b.js"],
    "names":["hot"],"mappings":"AAAA,SAEIA,W;ECGJ"})";
  Result<SourceMap> map = SourceMap::Parse(json, "x.js.map", "/app/dist");
  REQUIRE(map.ok());
  CHECK(map->source(0) == "/app/dist/src/a.js");
  CHECK(map->source(1) == "/app/dist/b.js");
  auto at = map->Find(0, 12);
  REQUIRE(at.has_value());
  CHECK(at->source == 0);
  CHECK(at->line == 2);
  CHECK(at->column == 4);
  CHECK(map->name(at->name) == "hot");
  CHECK(map->Find(0, 3)->line == 0);
  CHECK_FALSE(map->Find(0, 25).has_value());  // a segment that maps nothing
  auto b = map->Find(1, 7);
  REQUIRE(b.has_value());
  CHECK(b->source == 1);
  CHECK(b->line == 5);
  CHECK_FALSE(map->Find(1, 1).has_value());  // before the line's first segment
  CHECK_FALSE(map->Find(9, 0).has_value());
}

TEST_CASE("Source maps: malformed maps refused with the place, never read past") {
  auto refused = [](const std::string& json) {
    Result<SourceMap> m = SourceMap::Parse(json, "m.map", "");
    return m.ok() ? std::string() : m.status().message();
  };
  CHECK(refused("[]").find("not a JSON object") != std::string::npos);
  CHECK(refused(R"({"version":2,"sources":[],"mappings":""})").find("version 3") !=
        std::string::npos);
  CHECK(refused(R"({"version":3,"sections":[]})").find("index map") != std::string::npos);
  CHECK(refused(R"({"version":3,"sources":["a"],"mappings":"AAAA,!"})")
            .find("not base64 at byte 5") != std::string::npos);
  CHECK(refused(R"({"version":3,"sources":["a"],"mappings":"ACAA"})").find("out of range") !=
        std::string::npos);  // source 1 of 1
  CHECK(refused(R"({"version":3,"sources":["a"],"mappings":"AA"})").find("2 fields") !=
        std::string::npos);
  CHECK(refused(R"({"version":3,"sources":["a"],"mappings":"gggggggggA"})").find("32 bits") !=
        std::string::npos);
  CHECK(refused(R"({"version":3,"sources":["a"],"mappings":"D"})").find("column out of range") !=
        std::string::npos);  // -1
  CHECK(refused(R"({"version":3,"sources":["a"],"mappings":"AAAAC"})").find("name out of range") !=
        std::string::npos);
  CHECK(refused(R"({"version":3,"sources":[["a"]],"mappings":"AAAA"})").find("array or object") !=
        std::string::npos);
  // Fields not read are dropped while parsing, nested or not; a source that
  // is no string keeps its place.
  Result<SourceMap> kept = SourceMap::Parse(
      R"({"version":3,"x_facebook_sources":[[{"a":[1,2,[3]]}]],"sourcesContent":["x"],
          "sources":[null,"b.js"],"mappings":"ACAA"})",
      "m.map", "/d");
  REQUIRE(kept.ok());
  CHECK(kept->source(kept->Find(0, 0)->source) == "/d/b.js");
  std::mt19937_64 rng(11);
  const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/,;!";
  for (int i = 0; i < 2000; ++i) {
    std::string m(rng() % 40, 'A');
    for (char& c : m) c = alphabet[rng() % alphabet.size()];
    Result<SourceMap> map = SourceMap::Parse(
        R"({"version":3,"sources":["a","b"],"names":["n"],"mappings":")" + m + "\"}", "m.map", "");
    if (map.ok()) (void)map->Find(uint32_t(rng() % 4), uint32_t(rng() % 64));
  }
}

TEST_CASE("Source maps: the URL a script names, data: URLs and paths") {
  CHECK(SourceMappingUrl(u"f()\n//# sourceMappingURL=a.js.map\n") ==
        std::optional<std::string>("a.js.map"));
  CHECK(SourceMappingUrl(u"//# sourceMappingURL=old.map\nf()\n//@ sourceMappingURL=new.map") ==
        std::optional<std::string>("new.map"));
  CHECK_FALSE(SourceMappingUrl(u"f() // no map").has_value());
  CHECK(SourceMappingUrl(u"//# sourceMappingURL=real.map\nx = '//# sourceMappingURL=' + y;") ==
        std::optional<std::string>("real.map"));  // not the one in a string
  CHECK(SourceMappingUrl(u"f()\n  //# sourceMappingURL=a.map") ==
        std::optional<std::string>("a.map"));
  CHECK_FALSE(SourceMappingUrl(u"//# sourceMappingURL=\u00e9.map").has_value());
  // {"a":1}
  CHECK(DecodeDataUrl("data:application/json;charset=utf-8;base64,eyJhIjoxfQ==", 100).value() ==
        R"({"a":1})");
  CHECK_FALSE(DecodeDataUrl("data:text/plain;base64,eyJhIjoxfQ==", 100).ok());
  CHECK_FALSE(DecodeDataUrl("data:application/json;base64,eyJhIjoxfQ==", 2).ok());
  CHECK_FALSE(DecodeDataUrl("data:application/json;base64,e*J", 100).ok());
  CHECK(ResolvePath("/app/dist", "../src/./a.ts") == "/app/src/a.ts");
  CHECK(ResolvePath("/app", "../../../x.js") == "/x.js");
  CHECK(ResolvePath("/app", "file:///srv/a.js") == "/srv/a.js");
  CHECK(ResolvePath("/app", "webpack://pkg/a.js") == "webpack://pkg/a.js");
  CHECK(ResolvePath("", "a.js") == "a.js");
}
