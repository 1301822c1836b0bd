/*
 * buildinfo.h - what uniap and uniapd were built from, for their --version
 * and /metrics' uniapd_build_info: the Makefile writes $(BUILD)/gen/buildinfo.c
 * from its VERSION (git describe) and GIT_COMMIT (git rev-parse HEAD), each
 * "unknown" outside a git checkout.  Here, below both programs, although no
 * library defines it: each program links the generated object itself.
 *
 * Never: edit the generated file.
 */
#ifndef UNIAP_BUILDINFO_H
#define UNIAP_BUILDINFO_H

/* NUL-terminated, of A-Z a-z 0-9 . _ + - only (safe in a Prometheus label). */
extern const char buildinfo_version[];
extern const char buildinfo_git_commit[];

#endif
