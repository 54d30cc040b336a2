# SPDX-License-Identifier: MIT
# CPack: `cmake --build build/release --target package` (or `cpack -G DEB` in the build
# directory) writes headroom_<version>_<arch>.deb. Its Depends are runtime packages only:
# dpkg-shlibdeps finds the libraries the executables link (libqt6*6, libqcustomplot2.1,
# libzstd1, zlib1g, libc6, ...); what is loaded at run time without being linked would be
# added by hand below.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "headroom")
set(CPACK_PACKAGE_VENDOR "The Headroom authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "memory-snapshot explorer for PyTorch training runs")
set(CPACK_PACKAGE_DESCRIPTION
  "Headroom opens the CUDA memory snapshot of a PyTorch training run (for example one that
died of out-of-memory) and shows its memory over time, the peak, the OOM event with the
failing request, and the code that allocated what was alive, with phases, tensor
categories, the allocator's state at any event, a diagnosis and what-if projections.
It reads torch.cuda.memory snapshots, profiler memory timelines and Chrome/Kineto traces.
This package holds the Qt GUI (headroom) and the command-line tool (headroom-cli).")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)

# An address that cannot reach anyone by construction (.invalid): set a real one when
# publishing, e.g. -DHEADROOM_PACKAGE_MAINTAINER="Name <mail>".
set(HEADROOM_PACKAGE_MAINTAINER "The Headroom authors <maintainers@headroom.invalid>"
    CACHE STRING "Maintainer field of the .deb")
set(CPACK_PACKAGE_CONTACT "${HEADROOM_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${HEADROOM_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Nothing to add by hand at present: the SVG image-format and icon-engine plugins are in
# libqt6svg6 and the xcb and offscreen platform plugins in libqt6gui6, and both libraries
# are linked, so shlibdeps lists them (tests/install/check_package.py checks that it does).
# Add packages that are only dlopen()ed here, e.g.
#   set(CPACK_DEBIAN_PACKAGE_DEPENDS "qt6-wayland")

include(CPack)
