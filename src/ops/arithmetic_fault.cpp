#include "arithmetic_fault.hpp"

#include <csetjmp>
#include <csignal>
#include <mutex>

namespace tessera::detail {
namespace {

// The innermost guarded call of this thread, or nullptr outside any.
thread_local sigjmp_buf* t_landing = nullptr;

struct sigaction g_previous {};
std::once_flag g_installed;

void on_sigfpe(int sig, siginfo_t* info, void* context) {
  if (sigjmp_buf* landing = t_landing) {
    t_landing = nullptr;
    siglongjmp(*landing, sig);
  }
  // Not inside a task: behave as if this handler had never been installed.
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (!(g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default action: returning re-executes the faulting instruction, which now ends the process
  // with SIGFPE as it would have without us (ignoring a synchronous SIGFPE is not possible).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGFPE, &dfl, nullptr);
}

void install() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigfpe;
  sigemptyset(&sa.sa_mask);
  // SA_NODEFER: the signal is not blocked while the handler runs, so jumping out of it leaves
  // the thread's mask as it was and sigsetjmp need not save (a system call) the mask per task.
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGFPE, &sa, &g_previous);
}

}  // namespace

int run_catching_arithmetic_faults(GuardedBody body, void* state) {
  std::call_once(g_installed, install);
  sigjmp_buf landing;
  sigjmp_buf* const outer = t_landing;
  if (const int sig = sigsetjmp(landing, /*savemask=*/0)) {
    t_landing = outer;
    return sig;
  }
  t_landing = &landing;
  try {
    body(state);
  } catch (...) {
    t_landing = outer;
    throw;
  }
  t_landing = outer;
  return 0;
}

}  // namespace tessera::detail
