# cmake --install: the libraries, the public header, the engine's interfaces, the streampool
# command, the fake driver (for `streampool run --fake`), a CMake package and pkg-config files.
#
#   <prefix>/include/streampool/streampool.h             the public C interface
#   <prefix>/include/streampool/core/*.hpp               the engine's interfaces (streampool::core)
#   <prefix>/lib/streampool/libstreampool.so             the LD_PRELOAD library (streampool::preload)
#   <prefix>/lib/streampool/libcuda.so.1                 -> libstreampool.so, its SONAME
#   <prefix>/lib/streampool/fake/libcuda.so.1            the CPU-only fake driver
#   <prefix>/lib/streampool/runtime/libstreampool_cudart.so  the CUDA runtime library (streampool::cudart)
#   <prefix>/lib/streampool/runtime/libcudart.so.13      -> libstreampool_cudart.so, its SONAME
#   <prefix>/lib/streampool/libstreampool_alloc.so       the pluggable allocator (streampool::alloc)
#   <prefix>/include/streampool/pluggable.h              its entry points
#   <prefix>/lib/libstreampool_core.a                    the engine (streampool::core)
#   <prefix>/bin/streampool                              the command
#   <prefix>/lib/cmake/streampool/                       find_package(streampool CONFIG)
#   <prefix>/lib/pkgconfig/streampool.pc, streampool-core.pc, streampool-cudart.pc
#
# Why the shared libraries live in lib/streampool and not in lib: their SONAMEs are libcuda.so.1
# and libcudart.so.13. ldconfig, which a package manager runs after installing into /usr/lib (and
# which most systems run over /usr/local/lib), makes a link named after the SONAME of every
# library in the folders it scans: a libstreampool.so in <prefix>/lib would become the system's
# libcuda.so.1 for every program, NVIDIA's driver hidden behind it. lib/streampool is on no
# loader path; a program linked against streampool's libraries finds them by the RUNPATH the
# targets and .pc files give it (below), and a preload names the file.
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

# The engine: the facade and the interfaces another project implements (backing, ordering).
target_include_directories(streampool_core INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(streampool_core PROPERTIES EXPORT_NAME core)
install(FILES
  ${PROJECT_SOURCE_DIR}/src/core/engine.hpp ${PROJECT_SOURCE_DIR}/src/core/backing.hpp
  ${PROJECT_SOURCE_DIR}/src/core/ordering.hpp ${PROJECT_SOURCE_DIR}/src/core/keys.hpp
  ${PROJECT_SOURCE_DIR}/src/core/pool_props.hpp ${PROJECT_SOURCE_DIR}/src/core/status.hpp
  ${PROJECT_SOURCE_DIR}/src/core/release_policy.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streampool/core)

# Folders of lib/streampool, as install destinations and for the consumers' RUNPATH.
set(streampool_private_libdir ${CMAKE_INSTALL_LIBDIR}/streampool)
set(streampool_runtime_libdir ${streampool_private_libdir}/runtime)
install(TARGETS streampool_headers streampool_core EXPORT streampool-targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# A shared library of streampool's installed into `folder`, with a link named after its SONAME
# beside it (the name the loader looks for), and a RUNPATH to that folder for every program linked
# against it: the program's DT_NEEDED is the SONAME (libcuda.so.1, libcudart.so.13), which no
# folder of the system's library path holds, by design (above). A RUNPATH is searched before the
# loader's cache and the system folders (where NVIDIA's libraries are), after LD_LIBRARY_PATH.
function(streampool_install_shared target export_name folder soname)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  target_link_libraries(${target} INTERFACE streampool_headers)
  target_link_options(${target} INTERFACE "$<INSTALL_INTERFACE:LINKER:-rpath,$<INSTALL_PREFIX>/${folder}>")
  install(TARGETS ${target} EXPORT streampool-targets LIBRARY DESTINATION ${folder})
  install(CODE "file(MAKE_DIRECTORY \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${folder}\")
                file(CREATE_LINK $<TARGET_FILE_NAME:${target}>
                     \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${folder}/${soname}\" SYMBOLIC)")
endfunction()
if(TARGET streampool_preload)
  streampool_install_shared(streampool_preload preload ${streampool_private_libdir} libcuda.so.1)
endif()
# The CUDA runtime in a folder of its own: a program linked against the preload library must not
# find streampool's libcudart.so.13 in place of NVIDIA's through the preload's RUNPATH.
if(TARGET streampool_cudart)
  streampool_install_shared(streampool_cudart cudart ${streampool_runtime_libdir} libcudart.so.13)
endif()
# The pluggable allocator: loaded by path (PyTorch's CUDAPluggableAllocator, ctypes), its SONAME its
# file name, so it needs no link beside it.
if(TARGET streampool_alloc)
  set_target_properties(streampool_alloc PROPERTIES EXPORT_NAME alloc)
  target_link_libraries(streampool_alloc INTERFACE streampool_headers)
  install(TARGETS streampool_alloc EXPORT streampool-targets LIBRARY DESTINATION ${streampool_private_libdir})
  install(FILES ${PROJECT_SOURCE_DIR}/include/streampool/pluggable.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streampool)
endif()
install(EXPORT streampool-targets NAMESPACE streampool:: DESTINATION ${streampool_cmake_dir})

if(TARGET streampool_cli)
  install(TARGETS streampool_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET streampool_fakecuda)
  # As a plain file: its build-time RUNPATH is kept (install(TARGETS) would try to rewrite it).
  install(PROGRAMS $<TARGET_FILE:streampool_fakecuda> DESTINATION ${streampool_private_libdir}/fake)
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/streampoolConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/streampoolConfig.cmake INSTALL_DESTINATION ${streampool_cmake_dir}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR streampool_private_libdir)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/streampoolConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/streampoolConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/streampoolConfigVersion.cmake
  DESTINATION ${streampool_cmake_dir})

# Relocatable: the prefix is found from the .pc file's own folder (cmake --install --prefix moves it).
file(RELATIVE_PATH streampool_pc_to_prefix /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
set(STREAMPOOL_PC_PREFIX "\${pcfiledir}/${streampool_pc_to_prefix}")
set(streampool_pc_files streampool streampool-core)
if(TARGET streampool_cudart)
  list(APPEND streampool_pc_files streampool-cudart)
endif()
foreach(pc ${streampool_pc_files})
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/Package.cmake)
