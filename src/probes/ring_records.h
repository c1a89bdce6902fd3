// The records a thread's ring holds (sdk/c/microscope.h): words the
// program wrote and the recorder copied out, decoded here. Untrusted: a
// record whose size, operation or text does not hold stops the decoding
// with an error, and what came before it stands.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace microscope::probes {

struct RingRecord {
  uint64_t site = 0;  // the site's address in the program
  uint8_t op = 0;     // MICROSCOPE_OP_* (never THREAD: those set `tid`)
  uint64_t time = 0;  // on the ring's clock
  uint32_t tid = 0;   // the ring's thread when it was written
  uint64_t operand = 0;  // a counter's double (bits) or a label's integer
  std::string text;      // a label's text
};

struct RingChunk {
  std::vector<RingRecord> records;
  std::string error;  // empty: every word was decoded
  size_t error_word = 0;  // where decoding stopped (the index of the word)
};

// Decodes `words` (whole records, oldest first). `*tid` is the ring's
// thread before the first word, and after the last on return.
RingChunk DecodeRingWords(std::span<const uint64_t> words, uint32_t* tid);

}  // namespace microscope::probes
