#include "src/probes/targets.h"

#include <sys/uio.h>

#include <algorithm>

#include "src/probes/abi.h"

namespace microscope::probes {

bool WriteAt(uint32_t pid, uint64_t address, const void* data, size_t size) {
  iovec local{const_cast<void*>(data), size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return process_vm_writev(pid_t(pid), &local, 1, &remote, 1, 0) == ssize_t(size);
}
void WriteBytes(uint32_t pid, const std::vector<uint64_t>& addresses, uint8_t value) {
  std::vector<iovec> local, remote;
  for (size_t i = 0; i < addresses.size(); i += 1024) {
    const size_t n = std::min<size_t>(1024, addresses.size() - i);
    local.assign(n, iovec{&value, 1});
    remote.resize(n);
    for (size_t j = 0; j < n; ++j) remote[j] = {reinterpret_cast<void*>(addresses[i + j]), 1};
    (void)process_vm_writev(pid_t(pid), local.data(), n, remote.data(), n, 0);
  }
}

ProbeOp OpOf(uint8_t op) {
  switch (op) {
    case MICROSCOPE_OP_BEGIN:
      return ProbeOp::kBegin;
    case MICROSCOPE_OP_END:
      return ProbeOp::kEnd;
    case MICROSCOPE_OP_MARK:
      return ProbeOp::kMark;
    case MICROSCOPE_OP_COUNTER:
      return ProbeOp::kCounter;
    case MICROSCOPE_OP_LABEL_CLEAR:
      return ProbeOp::kLabelClear;
    default:
      return ProbeOp::kLabel;
  }
}

}  // namespace microscope::probes
