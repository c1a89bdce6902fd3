// How the server answers and whom it admits: JSON answers and errors, and
// the access check every request passes first. Internal to serve/.
#pragma once

#include <httplib.h>

#include <string>

namespace microscope::serve {

// `body` (JSON) with `status`.
void Answer(httplib::Response& res, int status, const std::string& body);
// The same, gzipped (level 1) when `compress` and the request accepts gzip:
// for a server bound beyond the loopback, where the bytes cost more than
// the compression (a 728 kB answer: 53 kB in 2.4 ms; on the loopback the
// whole answer took 2.1 ms plain).
void Answer(const httplib::Request& req, httplib::Response& res, int status, std::string body,
            const std::string& type, bool compress);
// {"error": message} with `status`.
void Fail(httplib::Response& res, int status, const std::string& message);

// Whether a request may go on (else `res` says why): an /api request must
// come from this server's own page or no page (Origin, Sec-Fetch-Site;
// `host` is the server's host:port) and carry `token` (a ?token=
// parameter, the cookie a page load with it set, or Authorization:
// Bearer), unless the token is empty (--no-token). Any request with the
// right ?token= sets the cookie, named after `port`.
bool Admit(const httplib::Request& req, httplib::Response& res, const std::string& host,
           const std::string& token, int port);

}  // namespace microscope::serve
