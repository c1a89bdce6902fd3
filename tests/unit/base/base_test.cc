#include <doctest.h>

#include "base/duration.h"
#include "base/hex.h"
#include "base/open_file.h"
#include "base/percent.h"
#include "base/plural.h"
#include "base/sha256.h"
#include "base/status.h"

namespace microscope {
namespace {

uint64_t Ns(const char* text) {
  Result<uint64_t> v = ParseDuration(text);
  REQUIRE_MESSAGE(v.ok(), text);
  return *v;
}

TEST_CASE("ParseDuration: every unit, on every command") {
  CHECK(Ns("500ns") == 500);
  CHECK(Ns("20us") == 20000);
  CHECK(Ns("20\xC2\xB5s") == 20000);
  CHECK(Ns("1.5ms") == 1500000);
  CHECK(Ns("2s") == 2000000000);
  CHECK(Ns("2") == 2000000000);  // a bare number is seconds
  CHECK(Ns("2m") == 120000000000);
  CHECK(Ns("1h") == 3600000000000);
  CHECK(Ns("0") == 0);
  CHECK(Ns(".5s") == 500000000);
  CHECK(Ns("7d") == 7 * 86400000000000ull);
}

TEST_CASE("ParseByteSize: bytes and powers of 1024, refusing the rest") {
  CHECK(*ParseByteSize("4096") == 4096);
  CHECK(*ParseByteSize("64K") == 65536);
  CHECK(*ParseByteSize("500M") == 500ull << 20);
  CHECK(*ParseByteSize("500MB") == 500ull << 20);
  CHECK(*ParseByteSize("2GiB") == 2ull << 30);
  CHECK(*ParseByteSize("1T") == 1ull << 40);
  for (const char* bad : {"", "M", "-1M", "1.5G", "1X", "1 G", "99999999999T"}) {
    Result<uint64_t> v = ParseByteSize(bad);
    CHECK_MESSAGE(!v.ok(), bad);
    if (!v.ok()) CHECK(v.status().message().find("is not a size") != std::string::npos);
  }
}

TEST_CASE("ParseDuration: refuses what is not a duration, saying why") {
  for (const char* bad : {"", "s", "-1s", "1x", "1 s", " 1s", "1.2.3s", "inf", "nan", "1e3", "0x10",
                          "1ss", "99999999999h"}) {
    Result<uint64_t> v = ParseDuration(bad);
    CHECK_MESSAGE(!v.ok(), bad);
    if (!v.ok()) {
      CHECK(v.status().code() == StatusCode::kInvalidArgument);
      CHECK(v.status().message().find("is not a duration") != std::string::npos);
    }
  }
}

TEST_CASE("Hex: addresses with 0x, bytes as pairs") {
  CHECK(HexAddress(0) == "0x0");
  CHECK(HexAddress(0x1f40) == "0x1f40");
  CHECK(HexAddress(~0ull) == "0xffffffffffffffff");
  uint64_t v = 0;
  CHECK((ParseHex("1f40", &v) && v == 0x1f40));
  CHECK((ParseHex("FFFFffffFFFFffff", &v) && v == ~0ull));
  CHECK_FALSE(ParseHex("", &v));
  CHECK_FALSE(ParseHex("0x10", &v));
  CHECK_FALSE(ParseHex("10000000000000000", &v));  // 17 digits
  const uint8_t id[] = {0x00, 0x9c, 0xff};
  CHECK(HexBytes(id) == "009cff");
  CHECK(HexBytes({}) == "");
}

TEST_CASE("Percent: nothing of nothing is 0") {
  CHECK(Percent(0, 0) == 0.0);
  CHECK(Percent(1, 4) == 25.0);
  CHECK(Percent(4, 4) == 100.0);
}

TEST_CASE("Counted: singular for one, plural otherwise") {
  CHECK(Counted(1, "thread") == "1 thread");
  CHECK(Counted(0, "thread") == "0 threads");
  CHECK(Counted(2, "process", "processes") == "2 processes");
  CHECK(Counted(1, "process", "processes") == "1 process");
}

TEST_CASE("Status: the code survives context; Error never makes an ok status") {
  Status s = Status::Error(StatusCode::kNotFound, "no such process: 4");
  CHECK(!s.ok());
  Status c = s.WithContext("pid 4");
  CHECK(c.code() == StatusCode::kNotFound);
  CHECK(c.message() == "pid 4: no such process: 4");
  CHECK(Status::Error("x").code() == StatusCode::kUnknown);
  CHECK(!Status::Error(StatusCode::kOk, "x").ok());
  CHECK(OkStatus().ok());
  CHECK(OkStatus().code() == StatusCode::kOk);
}

}  // namespace
}  // namespace microscope

namespace microscope {
namespace {

TEST_CASE("OpenRegularFile: what went wrong is a code, not only words") {
  Result<ScopedFd> missing = OpenRegularFile("/nonexistent/microscope/file");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  Result<ScopedFd> dir = OpenRegularFile("/tmp");
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.status().code() == StatusCode::kInvalidArgument);
  CHECK(OpenRegularFile("/proc/self/status").ok());
  CHECK(CodeOfErrno(-13) == StatusCode::kPermissionDenied);
  CHECK(CodeOfErrno(3) == StatusCode::kNotFound);
  CHECK(CodeOfErrno(22) == StatusCode::kUnknown);
}

TEST_CASE("Sha256: FIPS 180-4's examples, and lengths on each side of a block's padding") {
  auto hex = [](std::string_view s) {
    return Sha256Hex({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  CHECK(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 55 bytes fit one padded block, 56 need two; 64 a whole block and one more.
  CHECK(hex(std::string(55, 'a')) ==
        "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(hex(std::string(56, 'a')) ==
        "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(hex(std::string(64, 'a')) ==
        "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  CHECK(hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace microscope
