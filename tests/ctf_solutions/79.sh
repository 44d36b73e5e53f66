#!/bin/bash
# The three moduli share primes pairwise: factor them with gcds and undo the three RSA layers in reverse order.
python3 - <<'PY'
from math import gcd
v = {k.strip(): int(x) for k, x in (l.split(":") for l in open("public-key.txt") if ":" in l)}
n1, n2, n3, e, c = v["n1"], v["n2"], v["n3"], v["e"], v["c"]
p = gcd(n1, n2); q = n1 // p; r = n2 // p
for a, b in [(q, r), (p, r), (p, q)]:
    c = pow(c, pow(e, -1, (a - 1) * (b - 1)), a * b)
print(c.to_bytes((c.bit_length() + 7) // 8, "big").decode())
PY
