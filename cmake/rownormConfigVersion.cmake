# Installed beside rownormConfig.cmake (by make install and by cmake --install): the package's
# version for find_package(rownorm X.Y). Before 1.0 a minor version may change the API (the
# CHANGELOG says how), so 0.Y is compatible with requests for 0.Y.Z up to this version only.
set(PACKAGE_VERSION "0.2.0")
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION_MAJOR EQUAL 0 AND PACKAGE_FIND_VERSION_MINOR EQUAL 2
       AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
else()
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
endif()
