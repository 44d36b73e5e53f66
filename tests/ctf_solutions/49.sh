#!/bin/bash
# XOR each byte of VaultDoor6's myBytes array with 0x55 to recover the password.
python3 - <<'PY'
import re
src = open('VaultDoor6.java').read()
body = re.search(r'myBytes = \{(.*?)\};', src, re.S).group(1)
key = int(re.search(r'\^\s*(0x[0-9a-fA-F]+)', src).group(1), 16)
print('picoCTF{' + ''.join(chr(int(t, 16) ^ key) for t in re.findall(r'0x[0-9a-fA-F]+', body)) + '}')
PY
