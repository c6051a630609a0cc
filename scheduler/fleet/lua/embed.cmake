# Builds the fleet's Lua scripts into the program: writes OUTPUT, a header that holds each .lua
# file of SOURCE_DIR as `crawler::detail::lua::<file name>`, a string of the file's text, so that
# the scripts are read and reviewed as Lua and still ship inside the binary.
#
#   cmake -DSOURCE_DIR=scheduler/fleet/lua -DOUTPUT=.../fleet_lua.h -P embed.cmake
file(GLOB scripts "${SOURCE_DIR}/*.lua")
list(SORT scripts)
set(text "// Generated from scheduler/fleet/lua/*.lua by scheduler/fleet/lua/embed.cmake: edit those.\n")
string(APPEND text "#pragma once\n\nnamespace crawler::detail::lua {\n")
foreach(script IN LISTS scripts)
  get_filename_component(name "${script}" NAME_WE)
  if(NOT name MATCHES "^[a-z_][a-z0-9_]*$")
    message(FATAL_ERROR "${script}: a script's name must be a C++ name (a-z, 0-9, _)")
  endif()
  file(READ "${script}" body)
  string(FIND "${body}" ")lua\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${script} holds )lua\" which would end its string early")
  endif()
  string(APPEND text "\ninline constexpr const char* ${name} = R\"lua(\n${body})lua\";\n")
endforeach()
string(APPEND text "\n}  // namespace crawler::detail::lua\n")
# Rewritten only when it changes, so a build that touched no script recompiles nothing.
file(WRITE "${OUTPUT}.new" "${text}")
file(COPY_FILE "${OUTPUT}.new" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.new")
