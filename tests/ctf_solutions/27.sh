#!/bin/bash
# Replace the assignment '=' in the if-condition of fixme2.py with '==', then run the fixed copy.
sed 's/^if flag = /if flag == /' fixme2.py > /tmp/fixed2.py
python3 /tmp/fixed2.py | grep -o 'picoCTF{[^}]*}'
