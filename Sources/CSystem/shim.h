#ifndef RUNNER_CSYSTEM_SHIM_H
#define RUNNER_CSYSTEM_SHIM_H

/* glibc declares these only under _GNU_SOURCE, which the Swift Glibc module is not built with. */
extern int syncfs(int fd);
extern int mkostemp(char *template, int flags);
extern int sync_file_range(int fd, long long offset, long long nbytes, unsigned int flags);

/* Open a folder only to look names up in it (no read permission needed); also _GNU_SOURCE-only. */
#include <fcntl.h>
static const int csystem_o_path = __O_PATH;

/* Start writeback of a file's dirty pages without waiting for it. */
#define CSYSTEM_SYNC_FILE_RANGE_WRITE 2

/* A worker asks for SIGKILL when the supervisor thread that started it dies (prctl is variadic). */
#include <signal.h>
#include <sys/prctl.h>
static inline int csystem_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGKILL); }

/* glibc malloc tuning (malloc.h is not in the Glibc module). */
#include <malloc.h>

#endif
