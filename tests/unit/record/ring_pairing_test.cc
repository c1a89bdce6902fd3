#include <doctest.h>

#include <linux/types.h>

#include <cstring>
#include <vector>

#include "bpf/stack_copy.h"
#include "src/record/ring_pairing.h"
#include "src/record/user_regs.h"

using namespace microscope::record;

namespace {

// A stack copier's record (bpf/stack_copy.h) for thread `tid` from `sp`.
std::vector<uint8_t> CopyRecord(uint32_t tid, uint64_t sp, std::vector<uint8_t> bytes) {
  ustack_record_header h{};
  h.magic = MICROSCOPE_STACK_MAGIC;
  h.tid = tid;
  h.sp = sp;
  h.size = uint32_t(bytes.size());
  std::vector<uint8_t> out(sizeof(h));
  std::memcpy(out.data(), &h, sizeof(h));
  out.insert(out.end(), bytes.begin(), bytes.end());
  return out;
}

Event Raw(uint32_t tid, const std::vector<uint8_t>& bytes) {
  Event e;
  e.type = EventType::kRaw;
  e.tid = tid;
  e.raw = bytes;
  return e;
}

// A sample of `tid` whose user registers say stack pointer `sp`.
struct Sample {
  std::vector<uint8_t> regs = std::vector<uint8_t>(kUserRegCount * 8);
  Event e;
  Sample(uint32_t tid, uint64_t sp) {
    std::memcpy(regs.data() + kUserRegSp * 8, &sp, 8);
    e.type = EventType::kSample;
    e.tid = tid;
    e.regs = regs;
  }
};

}  // namespace

TEST_CASE("RingPairing: a stack copy goes to its thread's next sample in its ring") {
  RingPairing pairing;
  const std::vector<uint8_t> copy = CopyRecord(7, 0x7000, {1, 2, 3, 4, 5, 6, 7, 8});
  const std::vector<uint8_t> walk = {0x77, 0x61, 0x6c, 0x6b, 0, 0, 0, 0};
  CHECK(RingPairing::IsStackCopy(copy));
  CHECK_FALSE(RingPairing::IsStackCopy(walk));
  pairing.Hold(0, Raw(7, copy));
  pairing.Hold(0, Raw(7, walk));  // the walker writes after the copier
  Sample other_ring(7, 0x7000);
  pairing.Next(1, &other_ring.e);
  CHECK(other_ring.e.stack.empty());
  Sample s(7, 0x7000);
  pairing.Next(0, &s.e);
  REQUIRE(s.e.stack.size() == 8);
  CHECK(s.e.stack[0] == 1);
  CHECK(s.e.stack[7] == 8);
  CHECK(s.e.walk.size() == walk.size());
  CHECK(pairing.stacks_paired() == 1);
  CHECK(pairing.stack_bytes() == 8);
  CHECK(pairing.TakeUnpaired(true) == 0);
  CHECK(pairing.stacks_unpaired() == 0);
}

TEST_CASE("RingPairing: a copy whose sample was lost, or from another stack pointer, is not used") {
  RingPairing pairing;
  pairing.Hold(0, Raw(7, CopyRecord(7, 0x7000, {1, 2, 3, 4, 5, 6, 7, 8})));
  Sample another_thread(8, 0x9000);
  pairing.Next(0, &another_thread.e);  // thread 7's sample never came
  CHECK(another_thread.e.stack.empty());
  CHECK(pairing.stacks_unpaired() == 1);

  pairing.Hold(0, Raw(7, CopyRecord(7, 0x7000, {1, 2, 3, 4, 5, 6, 7, 8})));
  Sample moved(7, 0x7100);
  pairing.Next(0, &moved.e);
  CHECK(moved.e.stack.empty());
  CHECK(pairing.stacks_unpaired() == 2);

  // A copy claiming more bytes than its record holds.
  std::vector<uint8_t> short_copy = CopyRecord(7, 0x7000, {1, 2, 3, 4, 5, 6, 7, 8});
  short_copy.resize(short_copy.size() - 4);
  pairing.Hold(0, Raw(7, short_copy));
  Sample s(7, 0x7000);
  pairing.Next(0, &s.e);
  CHECK(s.e.stack.empty());
  CHECK(pairing.stacks_unpaired() == 3);

  // Held at the end of the recording.
  pairing.Hold(1, Raw(7, CopyRecord(7, 0x7000, {})));
  pairing.TakeUnpaired(true);
  CHECK(pairing.stacks_unpaired() == 4);
  CHECK(pairing.stacks_paired() == 0);
}
