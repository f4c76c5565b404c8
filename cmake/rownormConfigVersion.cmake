# Installed beside rownormConfig.cmake (by make install and by cmake --install): the package's
# version for find_package(rownorm X.Y). Before 1.0 a minor version may change the API (the
# CHANGELOG says how), so 0.Y is compatible with requests for 0.Y.Z up to this version only:
# 0.3.0 answers find_package(rownorm 0.3) and refuses 0.2 (0.3 changed the steppers' signatures).
# From 1.0 a request for X.Y accepts any X.Y' >= X.Y of the same major version.
# tests/rel_version.sh checks that this version is the headers', the .pc file's, CMakeLists.txt's
# and the CHANGELOG's.
set(PACKAGE_VERSION "0.3.0")
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _rownorm_v "${PACKAGE_VERSION}")
set(_rownorm_major "${CMAKE_MATCH_1}")
set(_rownorm_minor "${CMAKE_MATCH_2}")
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(NOT PACKAGE_FIND_VERSION_MAJOR EQUAL _rownorm_major
       OR PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
       OR (_rownorm_major EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR EQUAL _rownorm_minor))
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
unset(_rownorm_v)
unset(_rownorm_major)
unset(_rownorm_minor)
