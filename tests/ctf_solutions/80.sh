#!/bin/bash
# Vigenere-decrypt cipher.txt with key CYLAB, advancing the key only on letters and keeping case.
python3 - <<'PY'
key = "CYLAB"; out = []; i = 0
for ch in open("cipher.txt").read().strip():
    if ch.isalpha():
        base = ord('a') if ch.islower() else ord('A')
        out.append(chr((ord(ch) - base - (ord(key[i % len(key)]) - ord('A'))) % 26 + base)); i += 1
    else:
        out.append(ch)
print("".join(out))
PY
