# What `cmake --install` adds besides the program, the plugins and the headers: libimgpipe.so (the
# C API), the CMake package (imgpipe::plugin, imgpipe::imgpipe, imgpipe_add_plugin) and the
# pkg-config files (imgpipe: the plugin SDK; imgpipe-api: the C API), all relocatable, so that
# `cmake --install build --prefix anywhere` gives a working SDK.
include(CMakePackageConfigHelpers)
set(IMGPIPE_CMAKE_SUBDIR "${CMAKE_INSTALL_LIBDIR}/cmake/imgpipe")

file(STRINGS "${PROJECT_SOURCE_DIR}/core/include/imgpipe/plugin.h" _abi_line REGEX "^#define IP_ABI_VERSION ")
string(REGEX REPLACE "^#define IP_ABI_VERSION +([0-9]+).*" "\\1" IMGPIPE_ABI_VERSION "${_abi_line}")

set_target_properties(imgpipe_abi PROPERTIES EXPORT_NAME plugin)
install(TARGETS imgpipe_abi imgpipe_shared EXPORT imgpipeTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Unspecified)
install(EXPORT imgpipeTargets NAMESPACE imgpipe:: DESTINATION "${IMGPIPE_CMAKE_SUBDIR}")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/imgpipeConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/imgpipeConfig.cmake"
  INSTALL_DESTINATION "${IMGPIPE_CMAKE_SUBDIR}"
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR IMGPIPE_PLUGIN_SUBDIR)
# 0.x: a new minor version may change the ABI, so only the same minor version is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/imgpipeConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/imgpipeConfig.cmake" "${PROJECT_BINARY_DIR}/imgpipeConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/cmake/imgpipeSdk.cmake"
        DESTINATION "${IMGPIPE_CMAKE_SUBDIR}")

# pkg-config finds the prefix from where the .pc file lies (${pcfiledir}).
file(RELATIVE_PATH IMGPIPE_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" IMGPIPE_PC_TO_PREFIX "${IMGPIPE_PC_TO_PREFIX}")
configure_file("${PROJECT_SOURCE_DIR}/imgpipe.pc.in" "${PROJECT_BINARY_DIR}/imgpipe.pc" @ONLY)
configure_file("${PROJECT_SOURCE_DIR}/imgpipe-api.pc.in" "${PROJECT_BINARY_DIR}/imgpipe-api.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/imgpipe.pc" "${PROJECT_BINARY_DIR}/imgpipe-api.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
