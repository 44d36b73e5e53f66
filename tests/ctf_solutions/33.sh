#!/bin/bash
# Try each candidate password listed in level4.py against the stored MD5 and XOR-decrypt the flag with the match.
python3 - <<'PY'
import hashlib, re
src = open('level4.py').read()
cands = re.findall(r'"([0-9a-f]{4})"', src.split('pos_pw_list')[1])
target = open('level4.hash.bin', 'rb').read()
enc = open('level4.flag.txt.enc', 'rb').read()
pw = next(c for c in cands if hashlib.md5(c.encode()).digest() == target)
print(''.join(chr(b ^ ord(pw[i % len(pw)])) for i, b in enumerate(enc)))
PY
