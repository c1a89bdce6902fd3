// The messages between serve's unprivileged server and its broker
// (broker.h), over a Unix stream socket: each one a 4-byte length, then its
// bytes; a descriptor, when a reply carries one, rides on the same sendmsg
// (SCM_RIGHTS). The broker decodes what a possibly compromised server
// sends, so requests are bounded and decoded strictly (fuzz_broker).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "capture/segments.h"

namespace microscope::serve {

enum class BrokerOp : uint8_t {
  kOpenCapture = 1,   // name: a served capture file
  kListSegments = 2,  // name: a served --continuous directory
  kOpenSegment = 3,   // name, and arg: one of its segments
  kOpenSource = 4,    // arg: a source file's path, as a capture names it
  kListCaptures = 5,  // the served directory's capture files now
};

struct BrokerRequest {
  BrokerOp op = BrokerOp::kOpenCapture;
  std::string name;
  std::string arg;
};

inline constexpr size_t kMaxBrokerRequest = 16 << 10;
inline constexpr size_t kMaxBrokerReply = 64 << 20;

std::string EncodeRequest(const BrokerRequest& request);
// An error for anything but one well-formed request.
Result<BrokerRequest> DecodeRequest(std::string_view bytes);

// A reply: the status of the request, and for kListSegments and
// kListCaptures the listing (files' names, sizes and times) and how many
// files it left out (kMaxServedCaptures).
std::string EncodeReply(const Status& status, const std::vector<capture::SegmentFile>& files,
                        uint64_t left_out = 0);
Status DecodeReply(std::string_view bytes, std::vector<capture::SegmentFile>* files,
                   uint64_t* left_out = nullptr);

}  // namespace microscope::serve
