#!/bin/bash
# Try each candidate password listed at the end of level3.py until the checker prints the flag.
for pw in $(grep 'pos_pw_list' level3.py | grep -o '"[^"]*"' | tr -d '"'); do
  python3 level3.py <<<"$pw" | grep -o 'picoCTF{[^}]*}' && break
done
