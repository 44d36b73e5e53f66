#!/bin/bash
# Undo rev_PS.ps1: un-chain the XORs in output.txt, un-permute each 60-bit block, and read each 5x6 glyph as one bit of the flag.
python3 - <<'PY'
outs = [int(x) for x in open('output.txt').read().split()]
prev, glyphs = 0, []
for i, o in enumerate(outs, 1):
    fun = o ^ prev ^ (((i * 327) % 681 + 344) % 313)   # Random-Gen value for block i
    prev = o
    bits, seed, taken, raw = format(fun, '060b'), (i * 127) % 500, [False] * 30, ''
    for j in range(30):                                  # replay Scramble's slot choice
        y = (j * seed) % 30
        while taken[y]:
            y = (y + 1) % 30
        taken[y] = True
        raw += bits[2 * y]                               # "11" -> 1, "00" -> 0
    glyphs.append(raw)
dist = lambda a, b: sum(x != y for x, y in zip(a, b))
zero = glyphs[0]                                         # first flag bit is an ASCII MSB: 0
one = max(set(glyphs), key=lambda g: (dist(g, zero) > 5) * glyphs.count(g))
s = ''.join('1' if dist(g, one) < dist(g, zero) else '0' for g in glyphs)
print(bytes(int(s[k:k + 8], 2) for k in range(0, len(s), 8)).decode())
PY
