#!/bin/bash
# Recursively extract the zip archives appended to each nested image (binwalk -Me) and print flag.txt (UTF-16, so drop the NUL bytes).
src=$PWD/dolls.jpg; cd "$(mktemp -d)"
binwalk -q -Me "$src" >/dev/null 2>&1
tr -d '\000' < "$(find . -name flag.txt | head -1)"; echo
