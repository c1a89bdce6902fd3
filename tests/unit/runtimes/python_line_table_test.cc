#include <doctest.h>

#include <vector>

#include "src/runtimes/python/line_table.h"

using namespace microscope::runtimes::python;

TEST_CASE("Python line table: each entry form moves the line as CPython's locations.md says") {
  const std::vector<uint8_t> table = {
      0x80 | (0 << 3) | 1,  0x05,                        // short form, 2 units: same line (10)
      0x80 | (11 << 3) | 0, 4,           9,              // one-line form: +1 (11), 1 unit
      0x80 | (13 << 3) | 2, 0x07,                        // no columns: svarint 7 = -3 (8), 3 units
      0x80 | (14 << 3) | 0, 0x40 | 0x04, 0x01, 0, 1, 2,  // long: varint 68 = +34 (42)
      0x80 | (15 << 3) | 1,                              // no location, 2 units
      0x80 | (12 << 3) | 0, 0,           1,              // one-line form: +2 (44)
  };
  auto at = [&](uint32_t unit) { return LineOfInstruction(table, 10, unit); };
  CHECK(at(0).line == 10);
  CHECK(at(1).line == 10);
  CHECK(at(2).line == 11);
  CHECK(at(3).line == 8);
  CHECK(at(5).line == 8);
  CHECK(at(6).line == 42);
  CHECK(at(7).kind == LineLookup::kNoLine);
  CHECK(at(8).kind == LineLookup::kNoLine);
  CHECK(at(9).line == 44);
  CHECK(at(10).kind == LineLookup::kPastEnd);
  // A table cut inside an entry, or an entry without its first bit.
  CHECK(LineOfInstruction(std::span(table).first(6), 10, 5).kind == LineLookup::kMalformed);
  const std::vector<uint8_t> bad = {0x05};
  CHECK(LineOfInstruction(bad, 1, 0).kind == LineLookup::kMalformed);
  // Found by fuzz_python: line deltas past an int summed past int64
  // (undefined behaviour). Deltas and lines past an int are malformed.
  std::vector<uint8_t> huge = {0x80 | (13 << 3)};
  for (int i = 0; i < 10; ++i) huge.push_back(0x7f);  // a 64-bit svarint
  huge.push_back(0x03);
  CHECK(LineOfInstruction(huge, 1, 0).kind == LineLookup::kMalformed);
  std::vector<uint8_t> many;
  for (int i = 0; i < 3; ++i) {  // three deltas of +2^31 - 1 each
    many.push_back(0x80 | (13 << 3));
    for (uint8_t b : {0x7e, 0x7f, 0x7f, 0x7f, 0x7f}) many.push_back(b);
    many.push_back(0x01);
  }
  CHECK(LineOfInstruction(many, 1, 2).kind == LineLookup::kMalformed);
}

TEST_CASE("Python line table and layout: random bytes from a target never crash the readers") {
  // Both read untrusted memory: every input gets an answer, never a fault.
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  size_t kinds[4] = {};
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> bytes(next() % 64);
    for (uint8_t& b : bytes) b = uint8_t(next());
    const int first = int(next() % 1000);
    const uint32_t unit = uint32_t(next() % 128);
    LineLookup l = LineOfInstruction(bytes, first, unit);
    REQUIRE(l.kind <= LineLookup::kMalformed);
    // Decoded once, the table answers every unit as the scan does.
    const LineTable decoded = LineTable::Decode(bytes, first);
    for (uint32_t u : {unit, uint32_t(0), uint32_t(unit / 2), uint32_t(unit + 1)}) {
      LineLookup scan = LineOfInstruction(bytes, first, u), found = decoded.Find(u);
      REQUIRE(found.kind == scan.kind);
      REQUIRE(found.line == scan.line);
    }
    ++kinds[l.kind];
  }
  CHECK(kinds[LineLookup::kLine] > 0);
  CHECK(kinds[LineLookup::kMalformed] > 0);
}
