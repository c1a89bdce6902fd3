#include "capture/string_table.h"

namespace microscope::capture {

StringTable::StringTable(std::vector<std::string>* strings) : strings_(strings) {
  for (size_t i = 0; i < strings_->size(); ++i) ids_.emplace((*strings_)[i], StringId(i));
}

StringId StringTable::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  StringId id = StringId(strings_->size());
  strings_->emplace_back(s);
  ids_.emplace(s, id);
  return id;
}

}  // namespace microscope::capture
