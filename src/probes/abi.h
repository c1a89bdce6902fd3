// The probes ABI as the recorder reads it from another process: the
// structures and constants of sdk/c/microscope.h (one definition, included
// without its implementation), with the offsets this code relies on pinned.
#pragma once

#define MICROSCOPE_ABI_ONLY
#include "sdk/c/microscope.h"
#undef MICROSCOPE_ABI_ONLY

#include <cstddef>
#include <cstdint>

namespace microscope::probes {

inline constexpr uint32_t kAbiVersion = MICROSCOPE_ABI_VERSION;
inline constexpr size_t kSiteHeader = sizeof(microscope_site);
inline constexpr size_t kRingHeader = sizeof(microscope_ring);
inline constexpr size_t kCtlSize = sizeof(microscope_ctl);
inline constexpr size_t kSiteEnabledAt = offsetof(microscope_site, enabled);

static_assert(sizeof(microscope_site) == 16);
static_assert(offsetof(microscope_site, enabled) == 5);
static_assert(sizeof(microscope_ring) == 256);
static_assert(offsetof(microscope_ring, dropped) == 32);
static_assert(offsetof(microscope_ring, head) == 64);
static_assert(offsetof(microscope_ring, tail) == 128);
static_assert(sizeof(microscope_ctl) == 576);
static_assert(offsetof(microscope_ctl, rings) == 16);
static_assert(offsetof(microscope_ctl, state) == 36);
static_assert(offsetof(microscope_ctl, heartbeat) == 48);
static_assert(offsetof(microscope_ctl, selection) == 64);

// The biggest ring a program may declare (words): a bigger one is corrupt.
inline constexpr uint32_t kMaxRingWords = 1u << 24;

}  // namespace microscope::probes
