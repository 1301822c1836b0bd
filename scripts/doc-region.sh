#!/bin/sh
# scripts/doc-region.sh DOC NAME FILE - replaces the generated region NAME of
# the Markdown document DOC with the contents of FILE.  The region is the
# lines between "<!-- NAME: begin (generated ...) -->" and "<!-- NAME: end -->";
# both markers stay.  A document without the markers is left alone and the
# script fails, naming them.
set -u
doc=$1 name=$2 file=$3
if ! grep -q "^<!-- $name: begin" "$doc" || ! grep -q "^<!-- $name: end -->" "$doc"; then
	echo "doc-region: $doc has no '<!-- $name: begin ... -->' / '<!-- $name: end -->' markers" >&2
	exit 1
fi
tmp=$(mktemp)
awk -v name="$name" -v file="$file" '
	$0 ~ "^<!-- " name ": begin" { print; while ((getline line < file) > 0) print line; skip = 1; next }
	$0 ~ "^<!-- " name ": end -->" { skip = 0 }
	!skip' "$doc" >"$tmp" && cat "$tmp" >"$doc"
rc=$?
rm -f "$tmp"
exit $rc
