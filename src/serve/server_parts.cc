#include "src/serve/server_parts.h"

#include <arpa/inet.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "capture/segments.h"
#include "src/serve/server.h"

namespace microscope::serve {

std::string ErrorJson(const std::string& message) {
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                 nlohmann::json::error_handler_t::replace);
}

bool IsLoopback(const std::string& bind) {
  in_addr v4;
  if (inet_pton(AF_INET, bind.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return bind == "::1" || bind == "localhost";
}

std::string RandomToken() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    got += size_t(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

bool SameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= (unsigned char)(a[i] ^ b[i]);
  return diff == 0;
}

std::string CookieValue(const std::string& header, const std::string& name) {
  size_t at = 0;
  while (at < header.size()) {
    size_t end = header.find(';', at);
    if (end == std::string::npos) end = header.size();
    std::string pair = header.substr(at, end - at);
    const size_t first = pair.find_first_not_of(' ');
    pair = first == std::string::npos ? "" : pair.substr(first);
    if (pair.size() > name.size() && pair.compare(0, name.size(), name) == 0 &&
        pair[name.size()] == '=')
      return pair.substr(name.size() + 1);
    at = end + 1;
  }
  return "";
}

std::string CaptureName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

Result<std::vector<std::string>> CapturesToServe(const std::string& file_or_dir) {
  std::error_code ec;
  std::vector<std::string> out;
  if (std::filesystem::is_directory(file_or_dir, ec)) {
    // A --continuous directory's segments are one capture, named after it
    // and read again as segments come and go; other captures are their own.
    bool segments = false;
    for (const auto& entry : std::filesystem::directory_iterator(file_or_dir, ec)) {
      if (capture::IsSegmentName(entry.path().filename().string())) {
        segments = true;
      } else if (entry.path().extension() == ".mscap" && entry.is_regular_file(ec)) {
        out.push_back(entry.path().string());
      }
    }
    if (segments) {
      std::string dir = std::filesystem::path(file_or_dir).lexically_normal().string();
      while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
      out.push_back(dir);
    }
    if (ec) return Status::Error(file_or_dir + ": " + ec.message());
    std::sort(out.begin(), out.end());
    if (out.empty()) return Status::Error(file_or_dir + ": no .mscap file in this directory");
    return out;
  }
  if (!std::filesystem::is_regular_file(file_or_dir, ec)) {
    return Status::Error(file_or_dir + ": " +
                         (std::filesystem::exists(file_or_dir, ec) ? "not a regular file"
                                                                   : "no such file or directory"));
  }
  out.push_back(file_or_dir);
  return out;
}

bool HostAllowed(const std::string& host, int port, bool loopback_only) {
  const std::string suffix = ":" + std::to_string(port);
  if (host.size() <= suffix.size() ||
      host.compare(host.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  const std::string name = host.substr(0, host.size() - suffix.size());
  if (name == "localhost") return true;
  if (name.size() > 2 && name.front() == '[' && name.back() == ']') {
    in6_addr v6;
    const std::string literal = name.substr(1, name.size() - 2);
    if (inet_pton(AF_INET6, literal.c_str(), &v6) != 1) return false;
    return !loopback_only || IN6_IS_ADDR_LOOPBACK(&v6);
  }
  in_addr v4;
  if (inet_pton(AF_INET, name.c_str(), &v4) != 1) return false;
  return !loopback_only || (ntohl(v4.s_addr) >> 24) == 127;
}

}  // namespace microscope::serve
