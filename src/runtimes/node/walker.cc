#include "src/runtimes/node/walker.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <bpf/bpf.h>

#include <cerrno>
#include <limits>
#include <string>

#include "src/record/bpf_loader.h"

namespace microscope::runtimes::node {
namespace {

template <typename T>
bool Fits(int64_t v) {
  return v >= int64_t(std::numeric_limits<T>::min()) && v <= int64_t(std::numeric_limits<T>::max());
}

}  // namespace

Result<v8_process> ProcessOffsets(const V8Layout& l) {
  v8_process p{};
  const struct {
    const char* name;
    int64_t value;
    bool fits;
  } checks[] = {
      {"off_fp_function", l.fp_function, Fits<int32_t>(l.fp_function)},
      {"off_fp_context_or_frame_type", l.fp_context_or_type, Fits<int32_t>(l.fp_context_or_type)},
      {"off_fp_bytecode_array", l.fp_bytecode_array, Fits<int32_t>(l.fp_bytecode_array)},
      {"off_fp_bytecode_offset", l.fp_bytecode_offset, Fits<int32_t>(l.fp_bytecode_offset)},
      {"HeapObject map", l.heap_object_map, Fits<uint16_t>(l.heap_object_map)},
      {"Map instance_type", l.map_instance_type, Fits<uint16_t>(l.map_instance_type)},
      {"JSFunction shared", l.function_shared, Fits<uint16_t>(l.function_shared)},
      {"SharedFunctionInfo name", l.shared_name, Fits<uint16_t>(l.shared_name)},
      {"SharedFunctionInfo script", l.shared_script, Fits<uint16_t>(l.shared_script)},
      {"JS_FUNCTION_TYPE", l.type_js_function, Fits<uint16_t>(l.type_js_function)},
      {"LastJSFunctionType", l.type_js_function_last,
       Fits<uint16_t>(l.type_js_function_last) && l.type_js_function_last >= l.type_js_function},
      {"SHARED_FUNCTION_INFO_TYPE", l.type_shared_function_info,
       Fits<uint16_t>(l.type_shared_function_info) && l.type_shared_function_info != 0},
      {"HeapObjectTag", l.heap_object_tag, Fits<uint8_t>(l.heap_object_tag)},
      {"HeapObjectTagMask", l.heap_object_tag_mask,
       Fits<uint8_t>(l.heap_object_tag_mask) && l.heap_object_tag_mask != 0},
  };
  for (const auto& c : checks) {
    if (!c.fits) {
      return Status::Error(StatusCode::kUnavailable, std::string("V8's ") + c.name + " (" +
                                                         std::to_string(c.value) +
                                                         ") does not fit the walker");
    }
  }
  p.fp_function = int32_t(l.fp_function);
  p.fp_context = int32_t(l.fp_context_or_type);
  p.fp_bytecode_array = int32_t(l.fp_bytecode_array);
  p.fp_bytecode_offset = int32_t(l.fp_bytecode_offset);
  p.heap_object_map = uint32_t(l.heap_object_map);
  p.map_instance_type = uint32_t(l.map_instance_type);
  p.function_shared = uint32_t(l.function_shared);
  p.shared_name = uint32_t(l.shared_name);
  p.shared_script = uint32_t(l.shared_script);
  p.type_function_first = uint16_t(l.type_js_function);
  p.type_function_last = uint16_t(l.type_js_function_last);
  p.type_shared = uint16_t(l.type_shared_function_info);
  p.tag = uint8_t(l.heap_object_tag);
  p.tag_mask = uint8_t(l.heap_object_tag_mask);
  return p;
}

Status SetProcess(Sampler& sampler, uint32_t pid, const v8_process& offsets) {
  __u32 key = pid;
  if (bpf_map_update_elem(sampler.map_fd(Sampler::Map::kV8Processes), &key, &offsets, BPF_ANY) !=
      0) {
    return record::BpfFailed("cannot lay out a V8 process for the walker", errno);
  }
  return OkStatus();
}

Status SetImage(Sampler& sampler, const std::string& path, const v8_process& offsets) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return Status::Error(StatusCode::kNotFound, path + ": not found");
  // The kernel's device numbers: major << 20 | minor.
  v8_image key{(uint64_t(major(st.st_dev)) << 20) | minor(st.st_dev), uint64_t(st.st_ino)};
  if (bpf_map_update_elem(sampler.map_fd(Sampler::Map::kV8Images), &key, &offsets, BPF_ANY) != 0) {
    return record::BpfFailed("cannot give the walker a V8 image", errno);
  }
  return OkStatus();
}

void ForgetProcess(Sampler& sampler, uint32_t pid) {
  __u32 key = pid;
  bpf_map_delete_elem(sampler.map_fd(Sampler::Map::kV8Processes), &key);
}

}  // namespace microscope::runtimes::node
