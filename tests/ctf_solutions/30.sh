#!/bin/bash
# Read the hard-coded password out of level1.py and feed it to the checker.
pw=$(grep -o 'user_pw == "[^"]*"' level1.py | cut -d'"' -f2)
echo "$pw" | python3 level1.py | grep -o 'picoCTF{[^}]*}'
