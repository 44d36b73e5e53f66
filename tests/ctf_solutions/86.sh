#!/bin/bash
# Break new_vignere.py's cipher: for each key length, keep per-column shifts that decode to hex digits only; print the unique result.
python3 - <<'PY'
import itertools, string
A = string.ascii_lowercase[:16]
ct = "lejjlnjmjndkmjinkilbmlljjkmnakmmighhocmllojhjmaijpiohnlojmokjkja"
hexd = "0123456789abcdef"
for L in range(1, 15):
    # high nibbles (even positions) of '0'-'9' / 'a'-'f' are 3 or 6
    cols = [[k for k in range(16) if all((A.index(ct[p]) - k) % 16 in (3, 6)
             for p in range(c, len(ct), L) if p % 2 == 0)] for c in range(L)]
    for key in itertools.product(*cols):
        nib = [(A.index(ch) - key[p % L]) % 16 for p, ch in enumerate(ct)]
        pt = ''.join(chr(nib[i] * 16 + nib[i + 1]) for i in range(0, len(nib), 2))
        if all(c in hexd for c in pt):
            print("picoCTF{%s}" % pt)
PY
