#!/bin/bash
# Invert VaultDoor3's index permutation on the scrambled target string to recover the password.
python3 - <<'PY'
import re
s = re.search(r's\.equals\("([^"]*)"\)', open('VaultDoor3.java').read()).group(1)
pw = [''] * 32
for i in range(32):  # buffer[i] = password[src(i)], same loops as the Java code
    if i < 8: src = i
    elif i < 16: src = 23 - i
    elif i % 2 == 0: src = 46 - i
    else: src = i
    pw[src] = s[i]
print('picoCTF{' + ''.join(pw) + '}')
PY
