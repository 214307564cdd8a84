# Run by ctest after the tests (CTestCustom.cmake, CTEST_CUSTOM_POST_TEST): ctest lists skipped
# tests as "Skipped" without their message, so this says why the GPU tests (label gpu) skip here,
# in the words the tests themselves use. Silent where a GPU is present.
execute_process(COMMAND "${KNN_TESTS}" --gtest_filter=GpuMemory.ACaseOverDeviceMemoryIsSkippedBeforeAllocating
                OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE rc)
string(REGEX MATCH "no CUDA device \\([^\n]*\\)" reason "${out}")
if(reason)
  message("GPU tests (ctest -L gpu) are skipped on this machine: ${reason}")
endif()
