// Asks debuginfod servers for a module's debug file by build ID, through
// libdebuginfod opened on first use, as libdw itself does: linking it would
// load libcurl and its TLS stack into every command's start-up.
#pragma once

#include <elfutils/debuginfod.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace microscope::symbols {

class DebuginfodClient {
 public:
  // `urls`: DebuginfodUrlsValue of the servers to ask ("": none).
  explicit DebuginfodClient(std::string urls) : urls_(std::move(urls)) {}
  DebuginfodClient(const DebuginfodClient&) = delete;
  DebuginfodClient& operator=(const DebuginfodClient&) = delete;

  const std::string& urls() const { return urls_; }

  // The path of the debug file with `build_id` in libdebuginfod's cache
  // ("" if it named none), or why it was not found or not asked. The
  // servers come from the environment (see SymbolizeOptions): they are
  // asked only when $DEBUGINFOD_URLS holds exactly urls(), since any other
  // value would ask servers nobody named.
  Result<std::string> FindDebuginfo(const std::vector<uint8_t>& build_id);

 private:
  struct ClientDeleter {
    void operator()(debuginfod_client* client) const;
  };

  const std::string urls_;
  std::unique_ptr<debuginfod_client, ClientDeleter> client_;  // started on first use
};

}  // namespace microscope::symbols
