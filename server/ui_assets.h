/*
 * ui_assets.h - the web UI's files compiled into uniapd: every file directly
 * in ui/ whose name is [a-z0-9.-]+ with the extension .html, .js, .css, .svg,
 * .png, .ico, .json or .txt, as one byte array each and a table, which the
 * Makefile writes into $(BUILD)/gen/ui_assets.c (od + sed, no tool beyond
 * POSIX) whenever a file of ui/ changes, comes or goes (`make ui` lists them).
 * Other files in ui/ are left out.  uniapd hands the table to the UI's
 * handlers (ui.h), so GET /ui/ never reads the disk and answers the same from
 * any working directory.
 *
 * Thread safety: read-only data in static storage.
 * Never: edit the generated file; read ui/ at run time.
 */
#ifndef UNIAP_UI_ASSETS_H
#define UNIAP_UI_ASSETS_H

#include <stddef.h>

struct ui_asset {
	const char *name;           /* the file's name in ui/ ("app.js"): the {asset} of /ui/{asset} */
	const char *content_type;   /* by extension: "text/javascript; charset=utf-8", ... */
	const unsigned char *bytes; /* len bytes, then a NUL (not counted) */
	size_t len;
};

/* ui_asset_count assets in the order of their names, then an entry of NULLs; static storage. */
extern const struct ui_asset ui_assets[];
extern const size_t ui_asset_count;

#endif
