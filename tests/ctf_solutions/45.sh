#!/bin/bash
# Rebuild the password from the scrambled charAt(index) == 'c' checks in VaultDoor1.java.
python3 - <<'PY'
import re
pairs = re.findall(r"charAt\((\d+)\)\s*==\s*'(.)'", open('VaultDoor1.java').read())
pw = [''] * len(pairs)
for i, c in pairs:
    pw[int(i)] = c
print('picoCTF{' + ''.join(pw) + '}')
PY
