// A column of a capture table: owns its values while a capture is built,
// or views them in place inside the decompressed file when read, so that a
// large capture is not held twice in memory. Writing to a viewed column
// first copies it (copy on write).
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <vector>

namespace microscope::capture {

template <typename T>
class Column {
 public:
  Column() = default;
  Column(std::initializer_list<T> values) : owned_(values) {}
  explicit Column(size_t n) : owned_(n) {}
  Column(std::vector<T> values) : owned_(std::move(values)) {}
  // A view of `n` values at `data`; the caller keeps them alive.
  static Column View(const T* data, size_t n) {
    Column c;
    c.view_ = std::span<const T>(data, n);
    c.viewing_ = true;
    return c;
  }

  size_t size() const { return viewing_ ? view_.size() : owned_.size(); }
  bool empty() const { return size() == 0; }
  const T* data() const { return viewing_ ? view_.data() : owned_.data(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const T& operator[](size_t i) const { return data()[i]; }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[size() - 1]; }

  T& operator[](size_t i) {
    Own();
    return owned_[i];
  }
  void push_back(const T& v) {
    Own();
    owned_.push_back(v);
  }
  void pop_back() {
    Own();
    owned_.pop_back();
  }
  void reserve(size_t n) {
    Own();
    owned_.reserve(n);
  }
  void assign(size_t n, const T& v) {
    viewing_ = false;
    view_ = {};
    owned_.assign(n, v);
  }

  bool operator==(const Column& o) const { return std::equal(begin(), end(), o.begin(), o.end()); }
  bool operator==(const std::vector<T>& o) const {
    return std::equal(begin(), end(), o.begin(), o.end());
  }

 private:
  void Own() {
    if (!viewing_) return;
    owned_.assign(view_.begin(), view_.end());
    view_ = {};
    viewing_ = false;
  }

  std::vector<T> owned_;
  std::span<const T> view_;
  bool viewing_ = false;
};

}  // namespace microscope::capture
