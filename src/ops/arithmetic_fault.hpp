#pragma once
// Internal: a task's arithmetic fault (SIGFPE) becomes an error of that task, not the death of
// the process running it.
//
// Integer division by zero, and INT_MIN / -1, trap on x86-64 (SIGFPE). Tessera's own operations
// never divide that way (element_semantics defines those cases as NumPy does), but a user's
// registered function may; on a cluster that would kill every worker the scheduler retried the
// task on. run_op runs each host operation inside run_catching_arithmetic_faults: a SIGFPE raised
// by the operation's own thread while it runs jumps back there, and run_op throws. Only the
// task's frames are abandoned (their destructors do not run, so what they owned leaks); the
// process and its other tasks are untouched. Floating-point exceptions are masked by default and
// raise nothing. Other fatal signals (a segfault) mean the process's memory can no longer be
// trusted: those still end the process, for a supervisor to restart it.

namespace tessera::detail {

/** The body of a guarded call: runs with `state` on the calling thread. */
using GuardedBody = void (*)(void* state);

/**
 * @brief Runs body(state). Returns 0 when it returned, or the signal number (SIGFPE) that
 * interrupted it. Exceptions from body propagate. Calls nest. The first call installs a SIGFPE
 * handler that passes signals raised outside a guarded call on to the handler that was there
 * before (or the default action, which ends the process as before).
 */
int run_catching_arithmetic_faults(GuardedBody body, void* state);

}  // namespace tessera::detail
