#ifndef RUNNER_CSYSTEM_SHIM_H
#define RUNNER_CSYSTEM_SHIM_H

/* glibc declares these only under _GNU_SOURCE, which the Swift Glibc module is not built with. */
extern int syncfs(int fd);
extern int mkostemp(char *template, int flags);


#endif
