#!/bin/bash
# Base64-decode then URL-decode the expected string from VaultDoor5.java.
python3 - <<'PY'
import re, base64, urllib.parse
src = open('VaultDoor5.java').read().split('String expected')[1].split(';')[0]
b64 = ''.join(re.findall(r'"([^"]*)"', src))
print('picoCTF{' + urllib.parse.unquote(base64.b64decode(b64).decode()) + '}')
PY
