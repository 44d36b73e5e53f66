#!/bin/bash
# Decrypt the Fernet payload of unpackme.flag.py (printing instead of exec'ing it) and feed the revealed password to it.
pw=$(sed 's/^exec(\(.*\))$/print(\1)/' unpackme.flag.py | python3 | grep -oP "pw == '\K[^']+")
echo "$pw" | python3 unpackme.flag.py | grep -o 'picoCTF{[^}]*}'
