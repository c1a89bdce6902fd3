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
//   GET /                the browser view (web/)
//   GET /api/captures    the captures served: name, size, samples
//   GET /api/report?...  the report model for a query; 400 with a message
//                        for a bad parameter, 404 for an unknown capture,
//                        422 for one that does not read or a query it
//                        cannot answer
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
  std::string bind = "127.0.0.1";
  int port = 0;  // 0: a free one
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
  std::string url() const;
  // Answers requests until Stop (from another thread or a signal thread).
  void Run();
  void Stop();

  struct State;

 private:
  explicit Server(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The name a capture file is served under (its base name).
std::string CaptureName(const std::string& path);
// `text` for a URL's query (RFC 3986 unreserved characters kept).
std::string UrlEncode(const std::string& text);

// The capture files a serve argument names: the file itself, or the
// *.mscap files directly in a directory (sorted). An error when there are
// none, or two share a base name.
Result<std::vector<std::string>> CapturesToServe(const std::string& file_or_dir);

// Whether `host` (a Host header) names a server listening on `port`: an
// IPv4 literal, a bracketed IPv6 literal or "localhost", then ":port". With
// `loopback_only`, only 127.0.0.0/8, [::1] and localhost.
bool HostAllowed(const std::string& host, int port, bool loopback_only);

}  // namespace microscope::serve
