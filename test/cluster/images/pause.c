/* The pod sandbox's init process: sleeps until told to stop and reaps orphaned children.
 * Built statically so the image needs nothing but this binary. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction down = {.sa_handler = stop};
  struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &down, NULL) < 0 || sigaction(SIGTERM, &down, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    fprintf(stderr, "pause: sigaction: %s\n", strerror(errno));
    return 1;
  }
  for (;;) pause();
}
