# Installed with imgpipe's CMake package, for plugins built out of tree.
#
# imgpipe_add_plugin(NAME SOURCES src... [LIBRARIES lib...]) builds NAME.so the way imgpipe
# expects a plugin: no "lib" prefix, only imgpipe_stage() visible, C11 with -Wall -Wextra, and
# installs it into IMGPIPE_PLUGIN_DIR, where the installed imgpipe finds it. A .cu among the
# sources turns CUDA on: sm_90 code plus PTX (unless CMAKE_CUDA_ARCHITECTURES says otherwise),
# the shared CUDA runtime, and IMGPIPE_HAVE_CUDA=1 defined for every source of the plugin.
#
# A macro, not a function: enable_language() may only run at directory scope.
macro(imgpipe_add_plugin _imgpipe_name)
  set(_imgpipe_cuda OFF)
  foreach(_imgpipe_src IN ITEMS ${ARGN})
    if(_imgpipe_src MATCHES "\\.cu$")
      set(_imgpipe_cuda ON)
    endif()
  endforeach()
  if(_imgpipe_cuda)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
  endif()
  _imgpipe_plugin_target(${_imgpipe_name} ${_imgpipe_cuda} ${ARGN})
endmacro()

function(_imgpipe_plugin_target name cuda)
  cmake_parse_arguments(P "" "" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT P_SOURCES)
    message(FATAL_ERROR "imgpipe_add_plugin(${name}): no SOURCES given")
  endif()
  add_library(${name} MODULE ${P_SOURCES})
  set_target_properties(${name} PROPERTIES
    PREFIX "" C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
    C_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:C>:-Wall;-Wextra>")
  target_link_libraries(${name} PRIVATE imgpipe::plugin ${P_LIBRARIES})
  if(cuda)
    # Keeps the CUDA runtime's folder in the installed plugin's RPATH when it is not a system one.
    set_target_properties(${name} PROPERTIES CUDA_RUNTIME_LIBRARY Shared INSTALL_RPATH_USE_LINK_PATH ON)
    target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>")
    target_compile_definitions(${name} PRIVATE IMGPIPE_HAVE_CUDA=1)
    target_link_libraries(${name} PRIVATE CUDA::cudart)
  endif()
  install(TARGETS ${name} LIBRARY DESTINATION "${IMGPIPE_PLUGIN_DIR}")
endfunction()
