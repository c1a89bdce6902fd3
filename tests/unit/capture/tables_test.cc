#include "capture/tables.h"

#include <doctest.h>
#include <flatbuffers/minireflect.h>

#include <string>

#include "capture/columns.h"
#include "capture/schema_generated.h"

using namespace microscope::capture;
namespace fb = microscope::fb;

namespace {

// Each column of `Table` is the field of the schema's table at its
// position, by name, as a vector of elements of its stored size.
template <typename Table>
void CheckAgainstSchema(const flatbuffers::TypeTable* schema, const char* name) {
  CAPTURE(name);
  Table table;
  size_t i = 0;
  Table::ForEachColumn(table, [&](const ColumnInfo& info, auto& column) {
    using S = StoredType<std::remove_cvref_t<decltype(column[0])>>;
    CAPTURE(info.name);
    REQUIRE(i < schema->num_elems);
    // flatc escapes a name C++ reserves (module) with a trailing underscore.
    const std::string field = schema->names[i];
    CHECK((field == info.name || field == std::string(info.name) + "_"));
    const flatbuffers::TypeCode code = schema->type_codes[i];
    CHECK(code.is_repeating);
    CHECK(flatbuffers::InlineSize(flatbuffers::ElementaryType(code.base_type), nullptr) ==
          sizeof(S));
    ++i;
  });
  CHECK(i == schema->num_elems);
}

}  // namespace

TEST_CASE("Tables: each event table's columns are schema.fbs's fields, in its order") {
#define MICROSCOPE_CHECK_TABLE(Struct, member, COLUMNS) \
  CheckAgainstSchema<Struct>(fb::Struct##TypeTable(), #member);
  MICROSCOPE_EVENT_TABLES(MICROSCOPE_CHECK_TABLE)
#undef MICROSCOPE_CHECK_TABLE
}
