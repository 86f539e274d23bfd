# imgpipe_add_plugin(NAME SOURCES src...): builds NAME.so as an imgpipe plugin.
# In-tree plugins also link the kernels libraries.
function(imgpipe_add_plugin name)
  cmake_parse_arguments(P "" "" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${name} MODULE ${P_SOURCES})
  set_target_properties(${name} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden
                        LIBRARY_OUTPUT_DIRECTORY ${IMGPIPE_PLUGIN_OUTPUT_DIR})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:C>:${IMGPIPE_WARNINGS}>)
  target_link_libraries(${name} PRIVATE imgpipe_abi ipk_cpu ${P_LIBRARIES})
  if(IMGPIPE_HAVE_CUDA)
    target_compile_definitions(${name} PRIVATE IMGPIPE_HAVE_CUDA=1)
    target_link_libraries(${name} PRIVATE ipk_gpu CUDA::cudart)
  endif()
  install(TARGETS ${name} LIBRARY DESTINATION ${IMGPIPE_PLUGIN_SUBDIR})
endfunction()
