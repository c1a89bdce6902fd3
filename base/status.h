// Status and Result<T>: the project's one error vocabulary (no exceptions
// cross a layer). It lives in base/, below every other layer. A Status has a
// code, for callers that decide by what went wrong, and a message, for the
// user; callers never match the message's text.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace microscope {

// What went wrong, for a caller that acts on it (the text is for people).
enum class StatusCode : uint8_t {
  kOk = 0,
  kUnknown = 1,           // no caller distinguishes it
  kInvalidArgument = 2,   // a flag or value the user gave
  kNotFound = 3,          // the file, process or section is not there
  kPermissionDenied = 4,  // the kernel or the file system refused
  kUnavailable = 5,       // this host or kernel lacks it (no BTF, no BPF)
  kDataLoss = 6,          // malformed or truncated input (capture, ELF, DWARF, record)
  kInternal = 7,          // our own invariant broke
  kCancelled = 8,         // stopped from outside: its deadline passed, or a shutdown
  kTooLarge = 9,          // it would build more than it is allowed to
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Error(std::string message) {
    return Status(StatusCode::kUnknown, std::move(message));
  }
  static Status Error(StatusCode code, std::string message) {
    return Status(code == StatusCode::kOk ? StatusCode::kUnknown : code, std::move(message));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with where the error happened ("FILE: "); the code stays.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() {
  return Status();
}

// The code for an errno: not found, refused, or other.
inline StatusCode CodeOfErrno(int err) {
  if (err < 0) err = -err;
  switch (err) {
    case 2:   // ENOENT
    case 3:   // ESRCH
    case 20:  // ENOTDIR
      return StatusCode::kNotFound;
    case 1:   // EPERM
    case 13:  // EACCES
      return StatusCode::kPermissionDenied;
    default:
      return StatusCode::kUnknown;
  }
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status status) : value_(std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? OkStatus() : std::get<Status>(value_); }

  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace microscope

#define MS_CONCAT_INNER(a, b) a##b
#define MS_CONCAT(a, b) MS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::microscope::Status ms_status_ = (expr); \
    if (!ms_status_.ok()) return ms_status_;  \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(MS_CONCAT(ms_result_, __LINE__), lhs, expr)
