#include <doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "capture/container.h"

using namespace microscope::capture;

namespace {
std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string(name) + "." + std::to_string(getpid())))
      .string();
}
std::vector<uint8_t> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}
}  // namespace

TEST_CASE("Container: round trip and atomic publication") {
  std::string path = TempPath("container.mscap");
  std::vector<uint8_t> payload(100000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7 / 13);
  REQUIRE(WriteContainer(path, payload).ok());
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    CHECK(entry.path().string().rfind(path + ".tmp.", 0) != 0);  // no temporary left behind
  }
  auto read = ReadContainer(path);
  REQUIRE(read.ok());
  CHECK(*read == payload);
  std::filesystem::remove(path);
}

TEST_CASE("Container: every malformed header is refused with where it is") {
  std::string path = TempPath("container2.mscap");
  std::vector<uint8_t> payload(1000, 42);
  REQUIRE(WriteContainer(path, payload).ok());
  const std::vector<uint8_t> good = Slurp(path);
  std::filesystem::remove(path);

  SUBCASE("wrong magic") {
    auto bad = good;
    bad[0] = 'X';
    auto r = DecodeContainer(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("wrong magic") != std::string::npos);
  }
  SUBCASE("newer major version") {
    auto bad = good;
    uint16_t major = kFormatMajor + 1;
    std::memcpy(bad.data() + 8, &major, 2);
    auto r = DecodeContainer(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("newer than this microscope reads") != std::string::npos);
  }
  SUBCASE("older major version") {
    auto bad = good;
    uint16_t major = kFormatMajor - 1;
    std::memcpy(bad.data() + 8, &major, 2);
    auto r = DecodeContainer(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("older than this microscope reads") != std::string::npos);
  }
  SUBCASE("truncated header") {
    auto r = DecodeContainer(std::span(good).first(20));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("truncated") != std::string::npos);
  }
  SUBCASE("truncated body") {
    auto r = DecodeContainer(std::span(good).first(good.size() - 5));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("truncated") != std::string::npos);
  }
  SUBCASE("absurd payload size") {
    auto bad = good;
    uint64_t huge = ~0ull;
    std::memcpy(bad.data() + 16, &huge, 8);
    auto r = DecodeContainer(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("limit") != std::string::npos);
  }
  SUBCASE("flipped byte in the compressed data") {
    for (size_t at = 32; at < good.size(); ++at) {
      auto bad = good;
      bad[at] ^= 0x55;
      auto r = DecodeContainer(bad);
      // zstd's checksum catches any corruption of the frame.
      CHECK_FALSE(r.ok());
    }
  }
}

TEST_CASE("Container: a header claiming a huge payload allocates nothing") {
  std::string path = TempPath("container3.mscap");
  std::vector<uint8_t> payload(100, 1);
  REQUIRE(WriteContainer(path, payload).ok());
  auto bad = Slurp(path);
  std::filesystem::remove(path);
  uint64_t claimed = 1ull << 30;
  std::memcpy(bad.data() + 16, &claimed, 8);
  auto r = DecodeContainer(bad);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("declares 100 bytes, header says 1073741824") !=
        std::string::npos);
}
