# cmake -DINPUT=file -DOUTPUT=file.cc -DNAME=symbol -P embed_file.cmake: writes a C++ source that
# defines `std::string_view zinc::server::NAME()` returning the bytes of INPUT.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" n_hex)
math(EXPR n_bytes "${n_hex} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by embed_file.cmake; do not edit.\n#include <string_view>\n\n"
  "namespace zinc::server {\nnamespace {\nconst char kBytes[] = {\n${bytes}'\\0'};\n}  // namespace\n\n"
  "std::string_view ${NAME}() { return std::string_view(kBytes, ${n_bytes}); }\n\n}  // namespace zinc::server\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
