# The libtorch peers (kernels/peers/p_torch.cpp: p-torch, p-torch-direct, p-torch-cpu). Optional:
# without libtorch the file is still compiled (without torch's headers), so the three register and
# skip with the reason and the install command. Included once at the end of CMakeLists.txt: after the
# CUDA setup (a CUDA libtorch's TorchConfig.cmake looks for the CUDA toolkit and enables the CUDA
# language) and after the targets it adds the peers to. docs/peers-torch.md.
#   -DKNN_WITH_TORCH=OFF   build without it even when installed
#   a pip torch:           -DCMAKE_PREFIX_PATH=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
#   or                     -DTorch_DIR=<the folder of TorchConfig.cmake>
option(KNN_WITH_TORCH "Build p-torch* against libtorch when it is found" ON)

set(KNN_HAVE_TORCH 0)
set(KNN_HAVE_TORCH_CUDA 0)
set(_knn_torch_said "not found")
if(KNN_WITH_TORCH)
  # TorchConfig.cmake stops the configure with FATAL_ERROR when it cannot load (a CUDA libtorch
  # without a CUDA toolkit, a version mismatch), which find_package's QUIET does not catch. So it is
  # loaded first in a throwaway project of its own; only when that works is it loaded here.
  set(_knn_probe ${CMAKE_BINARY_DIR}/torch-probe)
  file(REMOVE_RECURSE ${_knn_probe}/build)
  file(WRITE ${_knn_probe}/src/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.24)
project(knn_torch_probe LANGUAGES CXX)
if(KNN_PROBE_CUDA)  # as in knnbench's configure, where the CUDA toolkit is found before
  find_package(CUDAToolkit QUIET)
endif()
find_package(Torch QUIET)
message(STATUS "knn-torch-probe: found=${TORCH_FOUND} dir=${Torch_DIR}")
]=])
  # The settings go through an initial cache file: lists (CMAKE_PREFIX_PATH) keep their semicolons.
  set(_knn_probe_init "")
  foreach(_knn_v CMAKE_CXX_COMPILER CMAKE_PREFIX_PATH CMAKE_BUILD_TYPE Torch_DIR)
    if(DEFINED ${_knn_v} AND NOT "${${_knn_v}}" MATCHES "-NOTFOUND$")
      string(APPEND _knn_probe_init "set(${_knn_v} [==[${${_knn_v}}]==] CACHE STRING \"\")\n")
    endif()
  endforeach()
  if(KNN_HAVE_CUDA)
    foreach(_knn_v CMAKE_CUDA_COMPILER CMAKE_CUDA_ARCHITECTURES)
      string(APPEND _knn_probe_init "set(${_knn_v} [==[${${_knn_v}}]==] CACHE STRING \"\")\n")
    endforeach()
    string(APPEND _knn_probe_init "set(KNN_PROBE_CUDA ON CACHE BOOL \"\")\n")
  endif()
  file(WRITE ${_knn_probe}/init.cmake "${_knn_probe_init}")
  set(_knn_probe_args -C ${_knn_probe}/init.cmake -S ${_knn_probe}/src -B ${_knn_probe}/build -G "${CMAKE_GENERATOR}")
  execute_process(COMMAND ${CMAKE_COMMAND} ${_knn_probe_args} RESULT_VARIABLE _knn_probe_rc
                  OUTPUT_VARIABLE _knn_probe_out ERROR_VARIABLE _knn_probe_out)
  string(REGEX MATCH "knn-torch-probe: found=([^ ]*) dir=([^\n]*)" _knn_probe_line "${_knn_probe_out}")
  set(_knn_probe_found "${CMAKE_MATCH_1}")
  set(_knn_probe_dir "${CMAKE_MATCH_2}")
  if(NOT _knn_probe_rc EQUAL 0)
    string(LENGTH "${_knn_probe_out}" _knn_len)
    math(EXPR _knn_from "${_knn_len} - 1500")
    if(_knn_from LESS 0)
      set(_knn_from 0)
    endif()
    string(SUBSTRING "${_knn_probe_out}" ${_knn_from} -1 _knn_tail)
    message(WARNING "knnbench: libtorch's CMake package failed to load, so p-torch, p-torch-direct and "
                    "p-torch-cpu are built without it and skip. Its output (in full: cmake -S ${_knn_probe}/src "
                    "-B ${_knn_probe}/build):\n${_knn_tail}\nFix the libtorch install (a CUDA libtorch needs the "
                    "CUDA toolkit), or configure with -DKNN_WITH_TORCH=OFF to build without it.")
    set(_knn_torch_said "failed to load (see the warning above)")
  elseif(_knn_probe_found)
    # What TorchConfig may change in this directory's scope, where every target reads it at the end:
    # a CUDA libtorch appends its nvcc flags to CMAKE_CUDA_FLAGS and sets CMAKE_CUDA_ARCHITECTURES
    # OFF (with a warning when it was set: it is unset meanwhile). Restored, or unset, after.
    set(_knn_torch_saved CMAKE_CXX_FLAGS CMAKE_CUDA_FLAGS CMAKE_CUDA_ARCHITECTURES CMAKE_MODULE_PATH CMAKE_CXX_STANDARD
        CMAKE_CUDA_STANDARD CMAKE_CUDA_STANDARD_REQUIRED CMAKE_CUDA_HOST_COMPILER)
    foreach(_knn_v ${_knn_torch_saved})
      set(_knn_defined_${_knn_v} 0)
      if(DEFINED ${_knn_v})
        set(_knn_defined_${_knn_v} 1)
        set(_knn_saved_${_knn_v} "${${_knn_v}}")
      endif()
    endforeach()
    unset(CMAKE_CUDA_ARCHITECTURES)
    find_package(Torch QUIET HINTS "${_knn_probe_dir}")
    foreach(_knn_v ${_knn_torch_saved})
      if(_knn_defined_${_knn_v} STREQUAL "1")
        set(${_knn_v} "${_knn_saved_${_knn_v}}")
      else()
        unset(${_knn_v})
      endif()
    endforeach()
    if(TORCH_FOUND AND TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
      # std::string crosses between p_torch.cpp and the rest: one ABI for all, or nothing.
      message(WARNING "knnbench: libtorch in ${Torch_DIR} is built with the old C++ ABI "
                      "(_GLIBCXX_USE_CXX11_ABI=0); building without it (p-torch* skip). Use a libtorch built "
                      "with the C++11 ABI (pip's torch 2.7 and later, Debian's libtorch-dev).")
      set(_knn_torch_said "old C++ ABI, not used")
    elseif(TORCH_FOUND)
      set(KNN_HAVE_TORCH 1)
      if(TARGET torch_cuda OR TARGET c10_cuda)
        set(KNN_HAVE_TORCH_CUDA 1)
      endif()
      set(_knn_torch_said "libtorch ${Torch_VERSION} (${Torch_DIR})")
    endif()
  endif()
else()
  set(_knn_torch_said "off (KNN_WITH_TORCH=OFF)")
endif()

# Two builds of p_torch.cpp. knn_peer_torch, linked into the programs: the registration, without
# torch's headers. knn_torch, a module beside knnbench: the libtorch half, which the registration
# loads with dlopen on first use. A program linked to libtorch would pay its start-up (2-5 s with
# Debian's libtorch, which pulls some 290 libraries) on every run, --list and the tests' runs included.
add_library(knn_peer_torch OBJECT ${CMAKE_CURRENT_SOURCE_DIR}/kernels/peers/p_torch.cpp)
target_link_libraries(knn_peer_torch PUBLIC knn_core ${CMAKE_DL_LIBS})
target_compile_definitions(knn_peer_torch PRIVATE KNN_HAVE_TORCH=${KNN_HAVE_TORCH})
if(KNN_HAVE_TORCH)
  add_library(knn_torch MODULE ${CMAKE_CURRENT_SOURCE_DIR}/kernels/peers/p_torch.cpp)
  # knn_core's headers and definitions (its types cross into the module), not its code: the module
  # uses header-only parts alone, and --no-undefined says so at link time.
  target_include_directories(knn_torch PRIVATE $<TARGET_PROPERTY:knn_core,INTERFACE_INCLUDE_DIRECTORIES>)
  target_compile_definitions(knn_torch PRIVATE $<TARGET_PROPERTY:knn_core,INTERFACE_COMPILE_DEFINITIONS>
                             KNN_TORCH_MODULE=1 KNN_HAVE_TORCH=1 KNN_HAVE_TORCH_CUDA=${KNN_HAVE_TORCH_CUDA})
  target_link_libraries(knn_torch PRIVATE ${TORCH_LIBRARIES} fmt::fmt OpenMP::OpenMP_CXX)
  # pip's torch ships fmt's headers (a newer fmt than the system's) ahead of the system's on the include
  # path: the module then refers to that fmt's symbols, which the system's libfmt lacks. fmt header-only
  # in the module keeps it whole, whichever fmt's headers it sees.
  target_compile_definitions(knn_torch PRIVATE FMT_HEADER_ONLY=1)
  target_link_options(knn_torch PRIVATE LINKER:--no-undefined)
  separate_arguments(_knn_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(knn_torch PRIVATE ${_knn_torch_flags})
  set_target_properties(knn_torch PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  target_compile_definitions(knn_peer_torch PRIVATE "KNN_TORCH_VERSION=\"${Torch_VERSION}\""
                             "KNN_TORCH_MODULE_PATH=\"$<TARGET_FILE:knn_torch>\"")
endif()
# The programs that link the versions link the registration, and are built with the module.
foreach(_knn_t knnbench knnbench-testbin knn_tests)
  if(TARGET ${_knn_t})
    target_link_libraries(${_knn_t} PRIVATE knn_peer_torch)
    if(KNN_HAVE_TORCH)
      add_dependencies(${_knn_t} knn_torch)
    endif()
  endif()
endforeach()
if(TARGET knn_tests)
  # tests/test_peer_torch.cpp knows how the peers are built: an answer or the "built without" reason.
  set_property(SOURCE ${CMAKE_CURRENT_SOURCE_DIR}/tests/test_peer_torch.cpp TARGET_DIRECTORY knn_tests APPEND PROPERTY
               COMPILE_DEFINITIONS KNN_TEST_HAVE_TORCH=${KNN_HAVE_TORCH} KNN_TEST_HAVE_TORCH_CUDA=${KNN_HAVE_TORCH_CUDA})
endif()
if(KNN_HAVE_TORCH_CUDA)
  string(APPEND _knn_torch_said ", with CUDA")
endif()
message(STATUS "knnbench: PyTorch peers: ${_knn_torch_said}")
