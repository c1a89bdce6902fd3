#include "src/symbols/namer.h"

#include "src/symbols/elf_image.h"

namespace microscope::symbols {

using capture::FunctionId;
using capture::ModuleId;

Namer::Namer(capture::Capture* c) : c_(c), strings_(&c->strings) {
  for (FunctionId i = 0; i < c->functions.size(); ++i) {
    functions_.emplace(std::make_pair(c->functions[i].module, c->strings[c->functions[i].name]), i);
  }
}

FunctionId Namer::Function(ModuleId module, const std::string& raw) {
  // Most frames of a module share their functions: demangle each raw name
  // once.
  auto [cached, fresh] = by_raw_.try_emplace(std::make_pair(module, raw), capture::kNone);
  if (!fresh) return cached->second;
  cached->second = Intern(module, raw);
  return cached->second;
}

FunctionId Namer::Intern(ModuleId module, const std::string& raw) {
  std::string name = Demangle(raw);
  auto key = std::make_pair(module, name);
  auto it = functions_.find(key);
  if (it != functions_.end()) {
    capture::Function& f = c_->functions[it->second];
    if (f.raw_name == capture::kNone && raw != name) f.raw_name = strings_.Intern(raw);
    return it->second;
  }
  capture::Function f;
  f.name = strings_.Intern(name);
  f.module = module;
  if (raw != name) f.raw_name = strings_.Intern(raw);
  c_->functions.push_back(f);
  FunctionId id = FunctionId(c_->functions.size() - 1);
  functions_.emplace(std::move(key), id);
  return id;
}

}  // namespace microscope::symbols
