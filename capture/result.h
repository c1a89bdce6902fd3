// Status and Result<T>: the project's one error vocabulary (no exceptions
// cross a layer). It lives in capture/, the lowest layer, so that every layer
// above can use it without capture/ depending on anything.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace microscope {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const { return *message_; }

  // Prefixes the message with where the error happened ("FILE: ").
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(context + ": " + *message_);
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

inline Status OkStatus() {
  return Status();
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
