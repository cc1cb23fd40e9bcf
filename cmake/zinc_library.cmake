# zinc_library(NAME DEPS...): a static library from every .cc in the calling folder, named
# zinc_NAME, linking only the listed (lower) layers. Layers point one way: see docs/ARCHITECTURE.md.
function(zinc_library name)
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  add_library(zinc_${name} STATIC ${srcs})
  target_include_directories(zinc_${name} PUBLIC ${ZINC_SOURCE_DIR}/src)
  target_link_libraries(zinc_${name} PUBLIC ${ARGN})
endfunction()
