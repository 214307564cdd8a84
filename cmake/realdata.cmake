# Real datasets' file formats: zlib (required) for gzipped IDX files, libhdf5 (optional) for
# ann-benchmarks' HDF5 files. Without libhdf5 the build succeeds and an HDF5 path is refused with
# "built without HDF5". Included from CMakeLists.txt after the knn_harness target exists.
find_package(ZLIB REQUIRED)
target_link_libraries(knn_harness PUBLIC ZLIB::ZLIB)

option(KNN_ENABLE_HDF5 "Read HDF5 data files (ann-benchmarks) when libhdf5 is found" ON)
set(KNN_HAVE_HDF5 OFF)
if(KNN_ENABLE_HDF5)
  enable_language(C)  # FindHDF5 test-compiles a C file
  find_package(HDF5 COMPONENTS C QUIET)
endif()
if(HDF5_FOUND)
  set(KNN_HAVE_HDF5 ON)
  target_include_directories(knn_harness PUBLIC ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
  target_link_libraries(knn_harness PUBLIC ${HDF5_C_LIBRARIES} ${HDF5_LIBRARIES})
  target_compile_definitions(knn_harness PUBLIC KNN_HAVE_HDF5=1 ${HDF5_DEFINITIONS})
  message(STATUS "knnbench: HDF5 ${HDF5_VERSION}: HDF5 data files readable")
else()
  target_compile_definitions(knn_harness PUBLIC KNN_HAVE_HDF5=0)
  message(STATUS "knnbench: no HDF5 found (libhdf5-dev): HDF5 data files are refused")
endif()
