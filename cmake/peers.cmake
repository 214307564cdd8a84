# The peer versions (kernels/peers/p_*.cpp): other libraries' exact kNN, measured and validated by the
# harness beside knnbench's own versions. Both libraries are optional: when one is not found, its
# versions are still built and registered, and skip with the reason "built without ..." and the
# install command. Included once at the end of CMakeLists.txt (the targets it adjusts exist by then).
#   -DKNN_WITH_FAISS=OFF / -DKNN_WITH_NANOFLANN=OFF   build without them even when installed
#   -DKNN_PEERS_PREFIX=DIR   also look under DIR (an unpacked package tree: DIR/usr/include, ...)
option(KNN_WITH_FAISS "Build p-faiss-* against faiss when it is found" ON)
option(KNN_WITH_NANOFLANN "Build p-nanoflann against nanoflann when it is found" ON)
set(KNN_PEERS_PREFIX "" CACHE PATH "Extra prefix searched for faiss and nanoflann (an unpacked package tree)")

set(_knn_peer_prefixes "")
if(KNN_PEERS_PREFIX)
  list(APPEND _knn_peer_prefixes "${KNN_PEERS_PREFIX}" "${KNN_PEERS_PREFIX}/usr")
endif()

set(KNN_HAVE_FAISS 0)
set(KNN_HAVE_FAISS_GPU 0)
if(KNN_WITH_FAISS)
  # faiss's own CMake package (Debian/Ubuntu libfaiss-dev, conda, a source install) defines the
  # target `faiss` with its BLAS and OpenMP.
  find_package(faiss CONFIG QUIET HINTS ${_knn_peer_prefixes})
  if(TARGET faiss)
    get_target_property(_knn_faiss_inc faiss INTERFACE_INCLUDE_DIRECTORIES)
    set(KNN_HAVE_FAISS 1)
    target_link_libraries(knn_versions PUBLIC faiss)
    # A faiss built with GPU support installs faiss/gpu/GpuDistance.h (bfKnn).
    find_path(_knn_faiss_gpu_header faiss/gpu/GpuDistance.h HINTS ${_knn_faiss_inc} NO_DEFAULT_PATH)
    if(_knn_faiss_gpu_header AND KNN_HAVE_CUDA)
      set(KNN_HAVE_FAISS_GPU 1)
    endif()
  endif()
endif()

set(KNN_HAVE_NANOFLANN 0)
if(KNN_WITH_NANOFLANN)
  # Header-only: the header is all it takes.
  find_path(KNN_NANOFLANN_INCLUDE nanoflann.hpp HINTS ${_knn_peer_prefixes} PATH_SUFFIXES include)
  if(KNN_NANOFLANN_INCLUDE)
    set(KNN_HAVE_NANOFLANN 1)
    if(NOT KNN_NANOFLANN_INCLUDE IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)  # -I/usr/include breaks #include_next
      set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/kernels/peers/p_nanoflann.cpp APPEND PROPERTY INCLUDE_DIRECTORIES ${KNN_NANOFLANN_INCLUDE})
    endif()
  endif()
endif()

# Only the peer files see these definitions: nothing else recompiles when they change.
set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/kernels/peers/p_faiss_flat.cpp ${CMAKE_CURRENT_SOURCE_DIR}/kernels/peers/p_faiss_gpu.cpp
             APPEND PROPERTY COMPILE_DEFINITIONS KNN_HAVE_FAISS=${KNN_HAVE_FAISS} KNN_HAVE_FAISS_GPU=${KNN_HAVE_FAISS_GPU})
set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/kernels/peers/p_nanoflann.cpp
             APPEND PROPERTY COMPILE_DEFINITIONS KNN_HAVE_NANOFLANN=${KNN_HAVE_NANOFLANN})
if(TARGET knn_tests)
  # The tests know which peers are built, to expect an answer or the "built without" reason.
  target_compile_definitions(knn_tests PRIVATE KNN_TEST_HAVE_FAISS=${KNN_HAVE_FAISS}
                             KNN_TEST_HAVE_FAISS_GPU=${KNN_HAVE_FAISS_GPU} KNN_TEST_HAVE_NANOFLANN=${KNN_HAVE_NANOFLANN})
endif()
set(_knn_peer_said "")
foreach(_knn_lib faiss faiss_gpu nanoflann)
  string(TOUPPER "${_knn_lib}" _knn_up)
  if(KNN_HAVE_${_knn_up})
    string(APPEND _knn_peer_said " ${_knn_lib}")
  else()
    string(APPEND _knn_peer_said " no-${_knn_lib}")
  endif()
endforeach()
message(STATUS "knnbench: peers:${_knn_peer_said} (faiss ${faiss_VERSION}; without one, its versions skip with the reason)")
