# Installed by `make install` and `cmake --install`: find_package(rownorm 0.3) gives
# rownorm::rownorm and rownorm::muon, header-only INTERFACE targets. Define
# ROWNORM_IMPLEMENTATION / MUON_IMPLEMENTATION in one source file.
get_filename_component(_rownorm_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
# libm only where it exists (MSVC has none)
find_library(ROWNORM_LIBM m)
foreach(_rownorm_t rownorm muon)
  if(NOT TARGET rownorm::${_rownorm_t})
    add_library(rownorm::${_rownorm_t} INTERFACE IMPORTED)
    set_target_properties(rownorm::${_rownorm_t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_rownorm_prefix}/include")
    if(ROWNORM_LIBM)
      set_property(TARGET rownorm::${_rownorm_t} APPEND PROPERTY INTERFACE_LINK_LIBRARIES "${ROWNORM_LIBM}")
    endif()
  endif()
endforeach()
unset(_rownorm_t)
unset(_rownorm_prefix)
