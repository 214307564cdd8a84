# MPI (optional): knnbench under mpirun and v18, the version that shards the references over the
# ranks. Without MPI the build still succeeds; v18 then skips with "built without MPI".
option(KNN_ENABLE_MPI "Build MPI support (knnbench under mpirun, v18) when MPI is found" ON)
set(KNN_HAVE_MPI OFF)
if(KNN_ENABLE_MPI)
  set(MPI_CXX_SKIP_MPICXX ON)  # the C API only: no libmpi_cxx (deprecated, absent from some installs)
  find_package(MPI COMPONENTS CXX)
endif()
if(KNN_ENABLE_MPI AND MPI_CXX_FOUND)
  set(KNN_HAVE_MPI ON)
  message(STATUS "knnbench: MPI ${MPI_CXX_VERSION} (${MPIEXEC_EXECUTABLE})")
  # Only the harness's MPI room (src/mpi_env.cpp) and the sharded versions include <mpi.h>;
  # src/core sees the definition alone.
  target_compile_definitions(knn_core PUBLIC KNN_HAVE_MPI=1)
  target_link_libraries(knn_harness PUBLIC MPI::MPI_CXX)
  target_link_libraries(knn_versions PUBLIC MPI::MPI_CXX)
else()
  message(STATUS "knnbench: no MPI: v18 skips (\"built without MPI\"); install libopenmpi-dev openmpi-bin for it")
  target_compile_definitions(knn_core PUBLIC KNN_HAVE_MPI=0)
endif()

# Tests under mpirun: v18 against v0 on 2 and 4 ranks (CPU engine: no GPU is made visible), and a
# rank that fails (test-only t20). Oversubscribed: CI has 2 cores. Root is allowed (CI runs as root).
if(KNN_HAVE_MPI AND KNN_BUILD_TESTS)
  set(knn_mpi_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_btl_vader_single_copy_mechanism=none;OMPI_MCA_rmaps_base_oversubscribe=1;CUDA_VISIBLE_DEVICES=")
  if(KNN_SANITIZE)
    # LeakSanitizer reports Open MPI's own allocations that live until exit; the rest of ASan stays on.
    list(APPEND knn_mpi_env "ASAN_OPTIONS=detect_leaks=0")
  endif()
  set(knn_mpi_script ${CMAKE_CURRENT_SOURCE_DIR}/tests/mpi/mpi_case.sh)
  foreach(np 2 4)
    foreach(shape "plain;--m;37;--n;301;--k;3;--topk;8;--distribution;clusters"
                  "selfjoin;--m;250;--n;250;--k;4;--topk;32;--self-join;--distribution;duplicates"
                  "topk32;--m;20;--n;999;--k;16;--topk;32;--distribution;uniform"
                  "tiny;--m;7;--n;7;--k;2;--topk;6;--self-join;--distribution;duplicates")  # shards smaller than topk
      list(POP_FRONT shape name)
      add_test(NAME mpi.np${np}.${name}
               COMMAND bash ${knn_mpi_script} ${MPIEXEC_EXECUTABLE} ${np} $<TARGET_FILE:knnbench-testbin> pass ${shape})
      set_tests_properties(mpi.np${np}.${name} PROPERTIES LABELS "cpu;mpi" ENVIRONMENT "${knn_mpi_env}" TIMEOUT 60 PROCESSORS 2)
    endforeach()
  endforeach()
  add_test(NAME mpi.np4.failing_rank
           COMMAND bash ${knn_mpi_script} ${MPIEXEC_EXECUTABLE} 4 $<TARGET_FILE:knnbench-testbin> failing_rank --m 30 --n 200 --k 3 --topk 4)
  set_tests_properties(mpi.np4.failing_rank PROPERTIES LABELS "cpu;mpi" ENVIRONMENT "${knn_mpi_env}" TIMEOUT 60 PROCESSORS 2)
  add_test(NAME mpi.np2.missing_file
           COMMAND bash ${knn_mpi_script} ${MPIEXEC_EXECUTABLE} 2 $<TARGET_FILE:knnbench-testbin> missing_file)
  set_tests_properties(mpi.np2.missing_file PROPERTIES LABELS "cpu;mpi" ENVIRONMENT "${knn_mpi_env}" TIMEOUT 60 PROCESSORS 2)
endif()
