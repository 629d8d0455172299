# cpack: the installed tree (cmake/Install.cmake) as packages.
#   cpack --config build/CPackConfig.cmake -G TGZ   streampool-<version>-Linux.tar.gz, relocatable:
#                                                   unpack anywhere, every path is found from the files'
#                                                   own folders (bin/streampool, the CMake package, the .pc files)
#   cpack --config build/CPackConfig.cmake -G DEB   streampool_<version>_<arch>.deb, installed under /usr
# The shared libraries stay in /usr/lib/streampool, which ldconfig does not scan (Install.cmake
# says why), so installing the .deb changes no other program's libcuda.so.1 or libcudart.so.13.
set(CPACK_PACKAGE_NAME streampool)
set(CPACK_PACKAGE_VENDOR streampool)
set(CPACK_PACKAGE_CONTACT "streampool maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "drop-in replacement for CUDA's stream-ordered memory allocator")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_STRIP_FILES OFF)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "streampool maintainers")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The dependencies as dpkg-shlibdeps reads them from the ELF files (libc for the libraries, which
# link their C++ runtime statically; the system's C++ runtime for the command and the fake driver).
# NVIDIA's driver is not one: streampool forwards to it where it is installed, and
# `streampool run --fake` needs none.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nvidia-driver | libcuda1")
include(CPack)
