// A build without the browser view (meson -Dweb=disabled, or no npm): serve
// answers the JSON API, and its pages say the view was not built.
#include "src/serve/web_assets.h"

namespace microscope::serve {

std::span<const WebAsset> WebAssets() {
  return {};
}

}  // namespace microscope::serve
