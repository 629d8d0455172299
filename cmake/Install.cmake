# cmake --install: the libraries, the public header, the engine's interfaces, the streampool
# command, the fake driver (for `streampool run --fake`), a CMake package and pkg-config files.
#
#   <prefix>/include/streampool/streampool.h        the public C interface
#   <prefix>/include/streampool/core/*.hpp          the engine's interfaces (streampool::core)
#   <prefix>/lib/libstreampool.so                   the LD_PRELOAD library (streampool::preload)
#   <prefix>/lib/streampool/libcuda.so.1            -> ../libstreampool.so, for programs that look the driver up by file name
#   <prefix>/lib/streampool/fake/libcuda.so.1       the CPU-only fake driver
#   <prefix>/lib/libstreampool_core.a               the engine (streampool::core)
#   <prefix>/bin/streampool                         the command
#   <prefix>/lib/cmake/streampool/                  find_package(streampool CONFIG)
#   <prefix>/lib/pkgconfig/streampool.pc, streampool-core.pc
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(streampool_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/streampool)

# The public header alone (for programs that look streampool up at run time with dlsym).
add_library(streampool_headers INTERFACE)
set_target_properties(streampool_headers PROPERTIES EXPORT_NAME headers)
target_include_directories(streampool_headers INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
add_library(streampool::headers ALIAS streampool_headers)
install(FILES ${PROJECT_SOURCE_DIR}/include/streampool/streampool.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streampool)
set(streampool_exported streampool_headers)

# The engine: the facade and the interfaces another project implements (backing, ordering).
target_include_directories(streampool_core INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(streampool_core PROPERTIES EXPORT_NAME core)
install(FILES
  ${PROJECT_SOURCE_DIR}/src/core/engine.hpp ${PROJECT_SOURCE_DIR}/src/core/backing.hpp
  ${PROJECT_SOURCE_DIR}/src/core/ordering.hpp ${PROJECT_SOURCE_DIR}/src/core/keys.hpp
  ${PROJECT_SOURCE_DIR}/src/core/pool_props.hpp ${PROJECT_SOURCE_DIR}/src/core/status.hpp
  ${PROJECT_SOURCE_DIR}/src/core/release_policy.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streampool/core)
list(APPEND streampool_exported streampool_core)

if(TARGET streampool_preload)
  set_target_properties(streampool_preload PROPERTIES EXPORT_NAME preload)
  target_link_libraries(streampool_preload INTERFACE streampool_headers)
  list(APPEND streampool_exported streampool_preload)
  # Its SONAME is libcuda.so.1: a program linked against it needs this folder on its library path.
  install(CODE "file(MAKE_DIRECTORY \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/streampool\")
                file(CREATE_LINK ../libstreampool.so
                     \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/streampool/libcuda.so.1\" SYMBOLIC)")
endif()
# The CUDA runtime library, once it exists, under the same package.
if(TARGET streampool_cudart)
  set_target_properties(streampool_cudart PROPERTIES EXPORT_NAME cudart)
  target_link_libraries(streampool_cudart INTERFACE streampool_headers)
  list(APPEND streampool_exported streampool_cudart)
endif()

install(TARGETS ${streampool_exported} EXPORT streampool-targets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT streampool-targets NAMESPACE streampool:: DESTINATION ${streampool_cmake_dir})

if(TARGET streampool_cli)
  install(TARGETS streampool_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET streampool_fakecuda)
  # As a plain file: its build-time RUNPATH is kept (install(TARGETS) would try to rewrite it).
  install(PROGRAMS $<TARGET_FILE:streampool_fakecuda> DESTINATION ${CMAKE_INSTALL_LIBDIR}/streampool/fake)
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/streampoolConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/streampoolConfig.cmake INSTALL_DESTINATION ${streampool_cmake_dir}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/streampoolConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/streampoolConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/streampoolConfigVersion.cmake
  DESTINATION ${streampool_cmake_dir})

# Relocatable: the prefix is found from the .pc file's own folder (cmake --install --prefix moves it).
file(RELATIVE_PATH streampool_pc_to_prefix /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
set(STREAMPOOL_PC_PREFIX "\${pcfiledir}/${streampool_pc_to_prefix}")
foreach(pc streampool streampool-core)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
