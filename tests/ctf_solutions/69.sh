#!/bin/bash
# e=3 and M^3 only slightly exceeds N: find t with t*N + c a perfect cube, the cube root is the plaintext.
python3 - <<'PY'
import re
txt = open("ciphertext").read()
n = int(re.search(r"N: (\d+)", txt).group(1)); c = int(re.search(r"\(c\): (\d+)", txt).group(1))
def icbrt(x):  # integer cube root by Newton's method
    r = 1 << ((x.bit_length() + 2) // 3)
    while (y := (2 * r + x // (r * r)) // 3) < r: r = y
    return r
for t in range(10000):
    m = icbrt(t * n + c)
    if m ** 3 == t * n + c:
        print(m.to_bytes((m.bit_length() + 7) // 8, "big").decode().strip()); break
PY
