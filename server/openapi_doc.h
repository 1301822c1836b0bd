/*
 * openapi_doc.h - the OpenAPI document compiled into uniapd: the bytes of
 * schema/openapi.json, which the Makefile turns into $(BUILD)/gen/openapi_doc.c
 * (od + sed, no tool beyond POSIX) whenever the file changes.  uniapd hands
 * them to the HTTP layer, so GET /v1/openapi.json never reads the disk and
 * answers the same from any working directory.
 *
 * Never: edit the generated file; read schema/openapi.json at run time.
 */
#ifndef UNIAP_OPENAPI_DOC_H
#define UNIAP_OPENAPI_DOC_H

#include <stddef.h>

/* openapi_doc_json_len bytes of JSON, then a NUL (not counted); static storage. */
extern const unsigned char openapi_doc_json[];
extern const size_t openapi_doc_json_len;

#endif
