// The browser view's files (web/, built by scripts/build-web), embedded in
// the binary: `serve` needs no network and no file beside the binary.
#pragma once

#include <cstdint>
#include <span>

namespace microscope::serve {

struct WebAsset {
  const char* path;  // "/index.html", "/assets/index-HASH.js"
  const char* type;  // its Content-Type
  std::span<const unsigned char> bytes;
};

// Every file of the built view; empty when this binary was built without it.
std::span<const WebAsset> WebAssets();

}  // namespace microscope::serve
