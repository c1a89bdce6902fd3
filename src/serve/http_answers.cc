#include "src/serve/http_answers.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <span>
#include <sstream>
#include <vector>

#include "formats/gzip.h"
#include "src/serve/server_parts.h"

namespace microscope::serve {

void Answer(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  // With a parameter, the type is not one httplib compresses: its brotli
  // took 300 ms for a 600 kB answer, and on the loopback compression only
  // costs (e2e serve_api checks the answers go out plain).
  res.set_content(body, "application/json; charset=utf-8");
}

namespace {

// Whether an Accept-Encoding header takes gzip ("gzip" or "*", not with
// q=0).
bool AcceptsGzip(const std::string& header) {
  std::istringstream items(header);
  std::string item;
  while (std::getline(items, item, ',')) {
    std::string name, param;
    std::istringstream parts(item);
    std::getline(parts, name, ';');
    std::getline(parts, param);
    name.erase(std::remove_if(name.begin(), name.end(), ::isspace), name.end());
    param.erase(std::remove_if(param.begin(), param.end(), ::isspace), param.end());
    if (name != "gzip" && name != "*") continue;
    if (!param.starts_with("q=")) return true;
    return std::strtod(param.c_str() + 2, nullptr) > 0;
  }
  return false;
}

}  // namespace

void Answer(const httplib::Request& req, httplib::Response& res, int status, std::string body,
            const std::string& type, bool compress) {
  res.status = status;
  if (compress && AcceptsGzip(req.get_header_value("Accept-Encoding"))) {
    std::vector<uint8_t> z = formats::Gzip(
        std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size()), /*level=*/1);
    res.set_header("Content-Encoding", "gzip");
    res.set_header("Vary", "Accept-Encoding");
    res.set_content(reinterpret_cast<const char*>(z.data()), z.size(), type);
    return;
  }
  res.set_content(std::move(body), type);
}

void Fail(httplib::Response& res, int status, const std::string& message) {
  Answer(res, status, ErrorJson(message));
}

bool Admit(const httplib::Request& req, httplib::Response& res, const std::string& host,
           const std::string& token, int port) {
  const bool api = req.path.rfind("/api/", 0) == 0;
  if (api) {
    const std::string site = req.get_header_value("Sec-Fetch-Site");
    if (!site.empty() && site != "same-origin" && site != "none") {
      Fail(res, 403,
           "a request from another site (Sec-Fetch-Site: " + site +
               ") is refused: the API answers this server's own page");
      return false;
    }
    const std::string origin = req.get_header_value("Origin");
    if (!origin.empty() && origin != "http://" + host) {
      Fail(res, 403,
           "Origin '" + origin + "' is not this server (http://" + host +
               "): a request from another site is refused");
      return false;
    }
  }
  if (token.empty()) return true;
  const std::string cookie = "microscope_token_" + std::to_string(port);
  const std::string from_query = req.get_param_value("token");
  std::string given = from_query;
  if (given.empty()) given = CookieValue(req.get_header_value("Cookie"), cookie);
  const std::string authorization = req.get_header_value("Authorization");
  if (given.empty() && authorization.rfind("Bearer ", 0) == 0) given = authorization.substr(7);
  const bool valid = SameToken(given, token);
  if (valid && !from_query.empty()) {
    res.set_header("Set-Cookie", cookie + "=" + token + "; HttpOnly; SameSite=Strict; Path=/");
  }
  if (!api || valid) return true;
  Fail(res, given.empty() ? 401 : 403,
       given.empty() ? "this server needs the token of the URL it printed (open "
                       "http://HOST:PORT/?token=..., or send Authorization: Bearer TOKEN)"
                     : "the token given is not this server's");
  return false;
}

}  // namespace microscope::serve
