#!/bin/bash
# Decode VaultDoor4's byte array written in decimal, hex, octal and char literals.
python3 - <<'PY'
import re
body = re.search(r'myBytes = \{(.*?)\};', open('VaultDoor4.java').read(), re.S).group(1)
out = ''
for tok in (t.strip() for t in body.split(',') if t.strip()):
    if tok.startswith("'"): out += tok[1]
    elif tok.startswith('0x'): out += chr(int(tok, 16))
    elif tok.startswith('0') and len(tok) > 1: out += chr(int(tok, 8))
    else: out += chr(int(tok))
print('picoCTF{' + out + '}')
PY
