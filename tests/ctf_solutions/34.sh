#!/bin/bash
# Find the dictionary.txt word whose MD5 matches level5.hash.bin and XOR-decrypt the flag with it.
python3 - <<'PY'
import hashlib
target = open('level5.hash.bin', 'rb').read()
enc = open('level5.flag.txt.enc', 'rb').read()
words = open('dictionary.txt').read().split()
pw = next(w for w in words if hashlib.md5(w.encode()).digest() == target)
print(''.join(chr(b ^ ord(pw[i % len(pw)])) for i, b in enumerate(enc)))
PY
