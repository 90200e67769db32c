# Run at build time (cmake -P) after a GoogleTest binary links: lists its test suites
# (`--gtest_list_tests`) and writes OUT, a CTest file with one test per suite,
# `<NAME>:<Suite>`, running `BIN --gtest_filter=<Suite>.*` in DIR.
#
# One process per suite, not per case: every start of a sanitized binary costs about 0.16 s of
# CPU (ASan's shadow memory and globals, LeakSanitizer's scan at exit), and per case the suite
# started about 900 of them (docs/benchmarks.md, "The test command: one process per suite").
# Each runs through RUNNER (tests/run_suite.sh): a suite that passed with a case skipped exits
# 77 and CTest marks it skipped, never passed; a failure beside a skip stays a failure (CTest's
# SKIP_REGULAR_EXPRESSION, used before, marked such a suite skipped and the run green).
#
# Inputs: BIN, OUT, NAME, DIR, LABELS, RUNNER, COSTS (Suite=seconds,...: the suites that take
# longest start first on a fresh clone, which has no CTest timing history).
string(REPLACE "," ";" COSTS "${COSTS}")
execute_process(COMMAND "${BIN}" --gtest_list_tests
                OUTPUT_VARIABLE listed ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BIN} --gtest_list_tests failed (${rc}): ${err}")
endif()
string(REPLACE ";" "," listed "${listed}")
string(REPLACE "\n" ";" lines "${listed}")
set(content "# Written by tests/gtest_suites.cmake from ${BIN} --gtest_list_tests\n")
set(suites "")
foreach(line IN LISTS lines)
  # A suite's line is flush left and ends in '.', perhaps followed by a "# TypeParam" comment;
  # its cases are indented.
  if(line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( .*)?$")
    list(APPEND suites "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(NOT suites)
  message(FATAL_ERROR "${BIN} --gtest_list_tests named no test suite")
endif()
foreach(suite IN LISTS suites)
  set(test "${NAME}:${suite}")
  set(cost "")
  foreach(pair IN LISTS COSTS)
    if(pair MATCHES "^${suite}=([0-9]+)$")
      set(cost " COST ${CMAKE_MATCH_1}")
    endif()
  endforeach()
  string(APPEND content
    "add_test([=[${test}]=] [=[${RUNNER}]=] [=[${BIN}]=] [=[--gtest_filter=${suite}.*]=])\n"
    "set_tests_properties([=[${test}]=] PROPERTIES WORKING_DIRECTORY [=[${DIR}]=] "
    "LABELS [=[${LABELS}]=] SKIP_RETURN_CODE 77${cost})\n")
endforeach()
file(WRITE "${OUT}" "${content}")
