#!/bin/bash
# Remove the stray indentation before the final print in fixme1.py, then run the fixed copy.
sed 's/^[[:space:]]\+print(/print(/' fixme1.py > /tmp/fixed1.py
python3 /tmp/fixed1.py | grep -o 'picoCTF{[^}]*}'
