# Runs the grader built with wrong.cpp (GRADER) and with stubs.cpp (STUBS) to
# check its promises: each new failure of an exercise shows one more hint, up
# to the formula; a stub (nothing written) uses up no hint; the attempts file is
# written as every output of attend (a link stays a link); the printed seed
# draws the same inputs again. Works in SCRATCH, removed after, pass or fail.
function(die text)
  file(REMOVE_RECURSE ${SCRATCH})
  message(FATAL_ERROR "${text}")
endfunction()

function(grade out)
  execute_process(COMMAND ${GRADER} ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 1)
    die("expected exit 1 from a failing exercise, got ${rc}:\n${text}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

function(expect text regex what)
  if(NOT text MATCHES "${regex}")
    die("${what}: no match for ${regex} in\n${text}")
  endif()
endfunction()

function(expect_not text regex what)
  if(text MATCHES "${regex}")
    die("${what}: unexpected ${regex} in\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH})
set(attempts ${SCRATCH}/attempts.txt)

# The stages, one more per failure, then the formula stays.
grade(first --only softmax_backward --seed 5 --attempts ${attempts})
expect("${first}" "hint 1 of 3 \\(the idea\\)" "first failure")
expect_not("${first}" "hint 2 of 3" "first failure")
grade(second --only softmax_backward --seed 5 --attempts ${attempts})
expect("${second}" "hint 1 of 3.*\n     hint 2 of 3 \\(the shape of the formula\\)" "second failure")
expect_not("${second}" "hint 3 of 3" "second failure")
grade(third --only softmax_backward --seed 5 --attempts ${attempts})
expect("${third}" "hint 3 of 3 \\(the formula\\): dx \\+= y" "third failure")
grade(fourth --only softmax_backward --seed 5 --attempts ${attempts})
expect("${fourth}" "hint 3 of 3 \\(the formula\\)" "fourth failure")
# Another exercise keeps its own count.
grade(other --only cross_entropy_backward --seed 5 --attempts ${attempts})
expect_not("${other}" "hint 2 of 3" "another exercise")
# --hint asks for a stage directly.
grade(asked --only dot_attention_backward --seed 5 --hint 3)
expect("${asked}" "hint 3 of 3 \\(the formula\\)" "--hint 3")

# Grading all nine while most are still stubs uses up no hint: "nothing was
# written" is not an attempt, so the first real failure of each shows hint 1.
set(fresh_attempts ${SCRATCH}/stubs_first.txt)
execute_process(COMMAND ${STUBS} --seed 5 --attempts ${fresh_attempts} OUTPUT_VARIABLE stubbed RESULT_VARIABLE rc)
if(NOT rc EQUAL 1)
  die("expected exit 1 from the stubs, got ${rc}:\n${stubbed}")
endif()
expect("${stubbed}" "nothing was written" "the stubs")
grade(after_stubs --seed 5 --attempts ${fresh_attempts})
expect("${after_stubs}" "hint 1 of 3" "the first real failures after the stubs")
expect_not("${after_stubs}" "hint 2 of 3" "the first real failures after the stubs")

# --attempts through a symbolic link: the link stays a link, its target gets the counts.
set(target ${SCRATCH}/target.txt)
set(link ${SCRATCH}/link.txt)
file(WRITE ${target} "softmax_backward 1\n")
file(CREATE_LINK ${target} ${link} SYMBOLIC RESULT linked)
if(NOT linked EQUAL 0)
  die("could not make a symbolic link in ${SCRATCH}: ${linked}")
endif()
grade(through_link --only softmax_backward --seed 5 --attempts ${link})
expect("${through_link}" "hint 2 of 3" "the count read through the link")
if(NOT IS_SYMLINK ${link})
  die("--attempts ${link}: the link was replaced by a file")
endif()
file(READ ${target} counted)
expect("${counted}" "softmax_backward 2\n" "the link's target")
file(GLOB leftovers ${SCRATCH}/*.tmp*)
if(leftovers)
  die("temporary files left behind: ${leftovers}")
endif()

# A seed draws the same inputs again (the same report, number for number); another seed does not.
grade(a --only additive_attention_backward --seed 11)
grade(b --only additive_attention_backward --seed 11)
grade(c --only additive_attention_backward --seed 12)
if(NOT a STREQUAL b)
  die("--seed 11 twice gave two reports:\n${a}\n${b}")
endif()
string(REPLACE "seed 11" "seed 12" a12 "${a}")
if(a12 STREQUAL c)
  die("--seed 11 and --seed 12 gave the same numbers:\n${a}\n${c}")
endif()
# Without --seed, the seed printed replays the run.
grade(fresh --only lstm_cell_backward)
expect("${fresh}" "^seed ([0-9]+): the inputs are drawn afresh at each run; --seed [0-9]+ draws these again\n" "fresh seed")
string(REGEX MATCH "^seed ([0-9]+)" _ "${fresh}")
grade(replayed --only lstm_cell_backward --seed ${CMAKE_MATCH_1})
if(NOT fresh STREQUAL replayed)
  die("the printed seed did not replay the run:\n${fresh}\n${replayed}")
endif()

file(REMOVE_RECURSE ${SCRATCH})
message(STATUS "hints staged, seeds replay")
