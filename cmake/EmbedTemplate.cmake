# cmake -DDIR=samples/plugin-template -DOUT=file.c -P EmbedTemplate.cmake
# Writes the template's files as C byte arrays for `imgpipe new-plugin` (core/src/cli/newplugin.c),
# so the folder stays the one source of truth. Each array ends with a 0 that size leaves out.
file(GLOB files LIST_DIRECTORIES false RELATIVE "${DIR}" "${DIR}/*")
list(FILTER files EXCLUDE REGEX "^\\.")
list(SORT files)
set(arrays "")
set(table "")
set(index 0)
foreach(name IN LISTS files)
  file(READ "${DIR}/${name}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "((0x..,){16})" "\\1\n    " bytes "${bytes}")
  string(APPEND arrays "static const unsigned char file${index}[] = {\n    ${bytes}0x00\n};\n")
  string(APPEND table "    { \"${name}\", file${index}, sizeof file${index} - 1 },\n")
  math(EXPR index "${index} + 1")
endforeach()
if(index EQUAL 0)
  message(FATAL_ERROR "EmbedTemplate: no files in ${DIR}")
endif()
file(WRITE "${OUT}.tmp"
  "/* Generated from samples/plugin-template by cmake/EmbedTemplate.cmake: do not edit. */\n"
  "#include \"cli/newplugin.h\"\n\n${arrays}\n"
  "const newplugin_file newplugin_files[] = {\n${table}};\n"
  "const int newplugin_n_files = ${index};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
