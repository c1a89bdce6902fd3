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

// A frame slot the walk reads: a word among the MICROSCOPE_V8_FRAME_WORDS
// it reads from fp - 56, below the frame pointer.
bool Slot(int64_t offset) {
  return offset < 0 && offset >= -8 * (MICROSCOPE_V8_FRAME_WORDS - 1) && offset % 8 == 0;
}
// An object field the walk reads: a word among the first
// MICROSCOPE_V8_OBJECT_WORDS it reads from the object's start.
bool Word(int64_t offset) {
  return offset >= 0 && offset < 8 * MICROSCOPE_V8_OBJECT_WORDS && offset % 8 == 0;
}
uint8_t SlotIndex(int64_t offset) {
  return uint8_t((offset + 8 * (MICROSCOPE_V8_FRAME_WORDS - 1)) / 8);
}

}  // namespace

Result<v8_process> ProcessOffsets(const V8Layout& l) {
  v8_process p{};
  const struct {
    const char* name;
    int64_t value;
    bool fits;
  } checks[] = {
      {"off_fp_function", l.fp_function, Slot(l.fp_function)},
      {"off_fp_context_or_frame_type", l.fp_context_or_type, Slot(l.fp_context_or_type)},
      {"off_fp_bytecode_array", l.fp_bytecode_array, Slot(l.fp_bytecode_array)},
      {"off_fp_bytecode_offset", l.fp_bytecode_offset, Slot(l.fp_bytecode_offset)},
      {"HeapObject map", l.heap_object_map, Word(l.heap_object_map)},
      {"Map instance_type", l.map_instance_type, Fits<uint16_t>(l.map_instance_type)},
      {"JSFunction shared", l.function_shared, Word(l.function_shared)},
      {"SharedFunctionInfo name", l.shared_name, Word(l.shared_name)},
      {"SharedFunctionInfo script", l.shared_script, Word(l.shared_script)},
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
  p.slot_function = SlotIndex(l.fp_function);
  p.slot_context = SlotIndex(l.fp_context_or_type);
  p.slot_bytecode_array = SlotIndex(l.fp_bytecode_array);
  p.slot_bytecode_offset = SlotIndex(l.fp_bytecode_offset);
  p.map_instance_type = uint32_t(l.map_instance_type);
  p.word_map = uint8_t(l.heap_object_map / 8);
  p.word_shared = uint8_t(l.function_shared / 8);
  p.word_name = uint8_t(l.shared_name / 8);
  p.word_script = uint8_t(l.shared_script / 8);
  p.type_function_first = uint16_t(l.type_js_function);
  p.type_function_last = uint16_t(l.type_js_function_last);
  p.type_shared = uint16_t(l.type_shared_function_info);
  p.tag = uint8_t(l.heap_object_tag);
  p.tag_mask = uint8_t(l.heap_object_tag_mask);
  p.isolate_tls = l.isolate_tls;
  // What the copies of young functions need (v8_snapshot); a value that
  // does not fit leaves them without that part, not the walk refused.
  if (Fits<uint16_t>(l.type_scope_info)) p.type_scope_info = uint16_t(l.type_scope_info);
  if (l.scope_info_context_locals > 0 && l.scope_info_context_locals < 16 &&
      l.scope_info_first_vars > 0 && l.scope_info_first_vars < 16) {
    p.scope_context_locals = uint8_t(l.scope_info_context_locals);
    p.scope_first_vars = uint8_t(l.scope_info_first_vars);
  }
  if (l.smi_shift_size >= 0 && l.smi_shift_size < 63) p.smi_shift = uint8_t(l.smi_shift_size + 1);
  if (l.script_name >= 0 && l.script_name < MICROSCOPE_V8_SNAP_OBJECT && l.script_name % 8 == 0)
    p.script_name = uint8_t(l.script_name);
  return p;
}

Status SetProcess(Sampler& sampler, uint32_t pid, const v8_process& offsets) {
  __u32 key = pid;
  if (bpf_map_update_elem(sampler.map_fd("v8_processes"), &key, &offsets, BPF_ANY) != 0) {
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
  if (bpf_map_update_elem(sampler.map_fd("v8_images"), &key, &offsets, BPF_ANY) != 0) {
    return record::BpfFailed("cannot give the walker a V8 image", errno);
  }
  return OkStatus();
}

void ForgetProcess(Sampler& sampler, uint32_t pid) {
  __u32 key = pid;
  bpf_map_delete_elem(sampler.map_fd("v8_processes"), &key);
}

}  // namespace microscope::runtimes::node
