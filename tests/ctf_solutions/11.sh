#!/bin/bash
# Run the provided ltdis.sh on the binary and grep the flag out of the strings file it writes.
bash ltdis.sh static >/dev/null
grep -o 'picoCTF{[^}]*}' static.ltdis.strings.txt
