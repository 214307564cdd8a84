# Read by ctest when it starts (tests/CMakeLists.txt adds it to TEST_INCLUDE_FILES): one ctest entry per test suite
# of knn_tests, which runs the suite's tests in one process through tests/run_suite.sh. A process per test paid the
# binary's start-up (0.3-1.3 s: some 8000 registered tests, and cuBLAS's initializers in CUDA builds) some 2500
# times, most of CI's test time. Entries: gpu.<suite> (label gpu) for the suites named Gpu*, <suite> (label cpu) for
# the others; the verdict suites (Verdicts*) time processes against each other and run alone (RUN_SERIAL).
# Set by the including file: KNN_TESTS (the binary), KNN_RUN_SUITE (run_suite.sh).
if(NOT EXISTS "${KNN_TESTS}")
  add_test(knn_tests.not_built "${KNN_TESTS}")  # fails, naming the missing binary
  return()
endif()
execute_process(COMMAND "${KNN_TESTS}" --gtest_list_tests OUTPUT_VARIABLE listing ERROR_VARIABLE listing_err
                RESULT_VARIABLE listing_rc TIMEOUT 120)
if(NOT listing_rc EQUAL 0)
  add_test(knn_tests.list_failed "${KNN_TESTS}" --gtest_list_tests)  # fails the same way, with its output
  return()
endif()
string(REPLACE "\n" ";" listing_lines "${listing}")
set(knn_suites "")
foreach(line IN LISTS listing_lines)
  # A suite's line: "Name." or "Prefix/Name.", maybe followed by "  # TypeParam = ..."; its tests follow, indented.
  if(line MATCHES "^([A-Za-z0-9_/]+)\\.")
    list(APPEND knn_suites "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(REMOVE_DUPLICATES knn_suites)
if(NOT knn_suites)
  add_test(knn_tests.no_suites "${KNN_TESTS}" --gtest_list_tests)
  set_tests_properties(knn_tests.no_suites PROPERTIES WILL_FAIL TRUE)  # a listing without suites proves nothing
  return()
endif()
foreach(suite IN LISTS knn_suites)
  if(suite MATCHES "^Gpu")
    set(name "gpu.${suite}")
    set(label gpu)
  else()
    set(name "${suite}")
    set(label cpu)
  endif()
  add_test("${name}" bash "${KNN_RUN_SUITE}" "${KNN_TESTS}" "${suite}.*")
  set_tests_properties("${name}" PROPERTIES LABELS "${label}" SKIP_RETURN_CODE 77)
  if(suite MATCHES "^Verdicts")
    set_tests_properties("${name}" PROPERTIES RUN_SERIAL TRUE)
  endif()
endforeach()
