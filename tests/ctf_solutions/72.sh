#!/bin/bash
# Try all 16 single-letter shift keys of new_caesar, undo the base16 encoding, keep the printable-hex-like result.
python3 - <<'PY'
import string
A = string.ascii_lowercase[:16]
enc = "dcebcmebecamcmanaedbacdaanafagapdaaoabaaafdbapdpaaapadanandcafaadbdaapdpandcac"
for k in range(16):
    nib = [(A.index(c) - k) % 16 for c in enc]
    s = "".join(chr(nib[i] * 16 + nib[i + 1]) for i in range(0, len(nib), 2))
    if all(ch in string.ascii_letters + string.digits + "_?" for ch in s):
        print("picoCTF{%s}" % s)
PY
