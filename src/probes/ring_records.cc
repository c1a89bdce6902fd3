#include "src/probes/ring_records.h"

#include <cstring>

#include "src/probes/abi.h"

namespace microscope::probes {

RingChunk DecodeRingWords(std::span<const uint64_t> words, uint32_t* tid) {
  RingChunk out;
  size_t at = 0;
  auto fail = [&](std::string why) {
    out.error = std::move(why);
    out.error_word = at;
    return out;
  };
  while (at < words.size()) {
    const uint64_t header = words[at];
    const uint64_t site = header & ((uint64_t(1) << 48) - 1);
    const uint8_t op = uint8_t(header >> 48);
    const size_t size = size_t(header >> 56);
    if (size < 2 || size > words.size() - at) {
      return fail("record of " + std::to_string(size) + " words with " +
                  std::to_string(words.size() - at) + " left");
    }
    size_t want = 2;
    switch (op) {
      case MICROSCOPE_OP_BEGIN:
      case MICROSCOPE_OP_END:
      case MICROSCOPE_OP_MARK:
      case MICROSCOPE_OP_LABEL_CLEAR:
        break;
      case MICROSCOPE_OP_COUNTER:
      case MICROSCOPE_OP_LABEL_INT:
      case MICROSCOPE_OP_THREAD:
        want = 3;
        break;
      case MICROSCOPE_OP_LABEL_TEXT:
        if (size < 3 || words[at + 2] > MICROSCOPE_LABEL_TEXT_MAX) {
          return fail("label text record of " + std::to_string(size) + " words");
        }
        want = 3 + size_t((words[at + 2] + 7) / 8);
        break;
      default:
        return fail("record of unknown operation " + std::to_string(op));
    }
    if (size != want) {
      return fail("record of operation " + std::to_string(op) + " has " + std::to_string(size) +
                  " words, not " + std::to_string(want));
    }
    if ((op == MICROSCOPE_OP_THREAD) != (site == 0)) {
      return fail(site == 0 ? "record without a site" : "thread record with a site");
    }
    if (op == MICROSCOPE_OP_THREAD) {
      const uint64_t t = words[at + 2];
      if (t == 0 || t > 0x7fffffff) return fail("thread record of tid " + std::to_string(t));
      *tid = uint32_t(t);
      at += size;
      continue;
    }
    if (*tid == 0) return fail("record before the ring named its thread");
    RingRecord r;
    r.site = site;
    r.op = op;
    r.time = words[at + 1];
    r.tid = *tid;
    if (want >= 3) r.operand = words[at + 2];
    if (op == MICROSCOPE_OP_LABEL_TEXT) {
      r.text.resize(size_t(r.operand));
      std::memcpy(r.text.data(), &words[at + 3], r.text.size());
      r.operand = 0;
    }
    out.records.push_back(std::move(r));
    at += size;
  }
  return out;
}

}  // namespace microscope::probes
