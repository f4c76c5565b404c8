# Installed by `make install`: find_package(rownorm) gives rownorm::rownorm and rownorm::muon,
# header-only INTERFACE targets. Define ROWNORM_IMPLEMENTATION / MUON_IMPLEMENTATION in one source file.
get_filename_component(_rownorm_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET rownorm::rownorm)
  add_library(rownorm::rownorm INTERFACE IMPORTED)
  set_target_properties(rownorm::rownorm PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rownorm_prefix}/include")
  target_link_libraries(rownorm::rownorm INTERFACE m)
endif()
if(NOT TARGET rownorm::muon)
  add_library(rownorm::muon INTERFACE IMPORTED)
  set_target_properties(rownorm::muon PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rownorm_prefix}/include")
  target_link_libraries(rownorm::muon INTERFACE m)
endif()
unset(_rownorm_prefix)
