#include "src/serve/broker_wire.h"

#include <cstring>

namespace microscope::serve {
namespace {

void PutU32(std::string* out, uint32_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void PutU64(std::string* out, uint64_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}
void PutString(std::string* out, std::string_view s) {
  PutU32(out, uint32_t(s.size()));
  out->append(s);
}

// A bounded reader: every read can fail.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}
  bool U8(uint8_t* v) {
    if (rest_.empty()) return false;
    *v = uint8_t(rest_[0]);
    rest_.remove_prefix(1);
    return true;
  }
  template <typename T>
  bool Fixed(T* v) {
    if (rest_.size() < sizeof(T)) return false;
    std::memcpy(v, rest_.data(), sizeof(T));
    rest_.remove_prefix(sizeof(T));
    return true;
  }
  bool String(std::string* s) {
    uint32_t n = 0;
    if (!Fixed(&n) || n > rest_.size()) return false;
    s->assign(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return true;
  }
  bool done() const { return rest_.empty(); }

 private:
  std::string_view rest_;
};

Status Malformed(const std::string& what) {
  return Status::Error(StatusCode::kDataLoss, "malformed broker message: " + what);
}

}  // namespace

std::string EncodeRequest(const BrokerRequest& request) {
  std::string out(1, char(request.op));
  PutString(&out, request.name);
  PutString(&out, request.arg);
  return out;
}

Result<BrokerRequest> DecodeRequest(std::string_view bytes) {
  if (bytes.size() > kMaxBrokerRequest) return Malformed("a request over 16 KiB");
  Reader r(bytes);
  uint8_t op = 0;
  BrokerRequest out;
  if (!r.U8(&op) || !r.String(&out.name) || !r.String(&out.arg) || !r.done()) {
    return Malformed("a truncated or overlong request");
  }
  if (op < uint8_t(BrokerOp::kOpenCapture) || op > uint8_t(BrokerOp::kListCaptures)) {
    return Malformed("unknown operation " + std::to_string(op));
  }
  if (out.name.find('\0') != std::string::npos || out.arg.find('\0') != std::string::npos) {
    return Malformed("a NUL in a name");
  }
  out.op = BrokerOp(op);
  return out;
}

std::string EncodeReply(const Status& status, const std::vector<capture::SegmentFile>& files,
                        uint64_t left_out) {
  std::string out(1, char(status.code()));
  PutString(&out, status.message());
  PutU32(&out, uint32_t(files.size()));
  for (const capture::SegmentFile& f : files) {
    PutString(&out, f.name);
    PutU64(&out, f.bytes);
    PutU64(&out, f.mtime_ns);
  }
  PutU64(&out, left_out);
  return out;
}

Status DecodeReply(std::string_view bytes, std::vector<capture::SegmentFile>* files,
                   uint64_t* left_out) {
  Reader r(bytes);
  uint8_t code = 0;
  std::string message;
  uint32_t n = 0;
  if (!r.U8(&code) || !r.String(&message) || !r.Fixed(&n)) return Malformed("a truncated reply");
  files->clear();
  for (uint32_t i = 0; i < n; ++i) {
    capture::SegmentFile f;
    if (!r.String(&f.name) || !r.Fixed(&f.bytes) || !r.Fixed(&f.mtime_ns)) {
      return Malformed("a truncated listing");
    }
    files->push_back(std::move(f));
  }
  uint64_t left = 0;
  if (!r.Fixed(&left) || !r.done()) return Malformed("a reply of unknown form");
  if (left_out != nullptr) *left_out = left;
  if (code == 0) return OkStatus();
  return Status::Error(StatusCode(code), message);
}

}  // namespace microscope::serve
