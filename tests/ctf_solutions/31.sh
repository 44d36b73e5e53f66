#!/bin/bash
# Evaluate the chr(...) password expression in level2.py and feed the result to the checker.
expr=$(grep -o 'user_pw == chr.*)' level2.py | sed 's/^user_pw == //; s/ )$//')
pw=$(python3 -c "print($expr)")
echo "$pw" | python3 level2.py | grep -o 'picoCTF{[^}]*}'
