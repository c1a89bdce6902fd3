// `microscope serve`: a read-only HTTP server over captures. Its JSON API
// answers report queries (analysis/report_params.h) with the report model
// as `report --json` prints it (formats/report_json.h), so every number it
// gives comes from analysis, never from the client.
//
// GET only (HEAD too); any other method is 405. The Host header must name
// this server by an IP literal or localhost, with its port: a page of
// another site whose name an attacker rebinds to 127.0.0.1 (DNS rebinding)
// sends its own name and is refused (403). Nothing from the file system
// is served but the captures named on the command line and the browser
// view's own files, embedded in the binary (web_assets.h).
//
// Against other local users (docs/security.md): every /api request needs
// the random token of the printed URL (a cookie once the page is loaded),
// and a cross-site Origin or Sec-Fetch-Site is refused (403); a query is
// computed beside others (at most as many at once as the host has CPUs,
// at least 2) and cancelled past its deadline or a bound on what it
// builds; regexes are RE2's, linear-time; connections are capped per
// client and in all, with deadlines on reading a request
// (guarded_http.h); answers are cached up to a byte bound.
//
//   GET /                the browser view (web/)
//   GET /api/captures    the captures served: name, size (a served directory
//                        listed again: captures added to it since the start
//                        too), and "unlisted" past kMaxServedCaptures
//   GET /api/report?...  the report model for a query; 400 with a message
//                        for a bad parameter, 404 for an unknown capture,
//                        422 for one that does not read or a query it
//                        cannot answer or that would build too much, 503
//                        for one cancelled past its deadline (or the server
//                        stopping); 401/403 without the token
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "formats/source_text.h"

namespace microscope::serve {

class Broker;

struct ServeOptions {
  // Capture files, served under their base names (unique).
  std::vector<std::string> captures;
  // The directory they came from (serve DIR), listed again as the page
  // asks for the captures: files added are served, removed ones not
  // (empty: the captures named are all).
  std::string directory;
  std::string bind = "127.0.0.1";
  int port = 0;  // 0: a free one
  // Every /api request must carry the token of the printed URL (its
  // ?token=, then the cookie the page load sets); false with --no-token.
  bool require_token = true;
  // A query still computing past this is cancelled (503).
  uint64_t query_timeout_ns = 10'000'000'000;
  // The answers kept, in bytes of their JSON.
  uint64_t cache_bytes = 256 << 20;
  // The source view's files: outside the source root, only what anyone on
  // the host could read (formats/source_text.h; for_anyone is set).
  formats::SourceOptions source;
  // What opens the captures and source files (broker.h); null: a
  // DirectBroker over `captures` and `source`, in this process.
  std::shared_ptr<Broker> broker;
};

class Server {
 public:
  // Listens (the port is bound when this returns) or says why not.
  static Result<std::unique_ptr<Server>> Open(const ServeOptions& options);
  ~Server();

  int port() const;
  // http://HOST:PORT/?token=TOKEN (no query with --no-token), with `query`
  // ("capture=a&diff=b") after the token.
  std::string url(const std::string& query = "") const;
  // Opens what is served through `broker` from now on (serve started as
  // root binds first, then separates privileges: broker.h). Before Run.
  void SetBroker(std::shared_ptr<Broker> broker);
  // The listening socket (the broker, which never serves, closes its copy).
  int listening_fd() const;
  // Answers requests until Stop (from another thread or a signal thread).
  void Run();
  // Cancels the queries computing and closes every connection: Run returns
  // within a few hundred milliseconds.
  void Stop();

  struct State;

 private:
  explicit Server(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The name a capture file is served under (its base name).
std::string CaptureName(const std::string& path);

// The capture files a serve argument names: the file itself, or the
// *.mscap files directly in a directory (sorted). An error when there are
// none, or two share a base name.
Result<std::vector<std::string>> CapturesToServe(const std::string& file_or_dir);

// Whether `host` (a Host header) names a server listening on `port`: an
// IPv4 literal, a bracketed IPv6 literal or "localhost", then ":port". With
// `loopback_only`, only 127.0.0.0/8, [::1] and localhost.
bool HostAllowed(const std::string& host, int port, bool loopback_only);

}  // namespace microscope::serve
