#!/bin/bash
# Cuts the row of signal flags into single flags, samples each on a 5x5 colour grid and matches it against the International Code of Signals designs.
python3 - <<'PY'
from PIL import Image
# Flag designs sampled at 10/30/50/70/90 % across and down (hoist on the left); ? = on a colour boundary.
# W white, R red, B blue, Y yellow, K black. Y (diagonal stripes) and Z (triangles) do not fit such a grid.
ICS = {
    "A": "WW?BB WW?B? WW?BW WW?B? WW?BB", "B": "RRRRR RRRR? RRRRW RRRR? RRRRR",
    "C": "BBBBB WWWWW RRRRR WWWWW BBBBB", "D": "YYYYY ????? BBBBB ????? YYYYY",
    "E": "BBBBB BBBBB ????? RRRRR RRRRR", "F": "WWRWW WRRRW RRRRR WRRRW WWRWW",
    "G": "YB?YB YB?YB YB?YB YB?YB YB?YB", "H": "WW?RR WW?RR WW?RR WW?RR WW?RR",
    "I": "YYYYY Y???Y ??K?? Y???Y YYYYY", "J": "BBBBB ????? WWWWW ????? BBBBB",
    "K": "YY?BB YY?BB YY?BB YY?BB YY?BB", "L": "YY?KK YY?KK ????? KK?YY KK?YY",
    "M": "WBBBW BWBWB BBWBB BWBWB WBBBW", "N": "BW?BW WB?WB ????? BW?BW WB?WB",
    "O": "?RRRR Y?RRR YY?RR YYY?R YYYY?", "P": "BBBBB B???B B?W?B B???B BBBBB",
    "Q": "YYYYY YYYYY YYYYY YYYYY YYYYY", "R": "RRYRR RRYRR YYYYY RRYRR RRYRR",
    "S": "WWWWW W???W W?B?W W???W WWWWW", "T": "R?W?B R?W?B R?W?B R?W?B R?W?B",
    "U": "RR?WW RR?WW ????? WW?RR WW?RR", "V": "RWWWR WRWRW WWRWW WRWRW RWWWR",
    "W": "BBBBB BWWWB BWRWB BWWWB BBBBB", "X": "WWBWW WWBWW BBBBB WWBWW WWBWW",
    # square numeral flags of the navy signal set
    "1": "RRRRR ????? YYYYY ????? RRRRR", "5": "BYYYB YBYBY YYBYY YBYBY BYYYB",
}
PAL = {"W": (255, 255, 255), "R": (220, 10, 30), "B": (10, 10, 160), "Y": (250, 240, 10), "K": (0, 0, 0)}
colour = lambda p: min(PAL, key=lambda k: sum((a - b) ** 2 for a, b in zip(p, PAL[k])))
im = Image.open("flag.png").convert("RGB")
px, w = im.load(), im.width
ink = lambda x, y: min(px[x, y]) < 200
segs, x = [], 0                      # runs of columns holding something in the top band
while x < w:
    if any(ink(x, y) for y in range(100)):
        a = x
        while x < w and any(ink(x, y) for y in range(100)): x += 1
        if segs and a - segs[-1][1] <= 1: segs[-1][1] = x
        else: segs.append([a, x])
    x += 1
out = ""
for a, b in segs:
    if b - a < 30:                   # a curly brace: '{' bulges to the left at mid height
        ys = [y for y in range(100) if any(ink(x, y) for x in range(a, b))]
        mid = [x for x in range(a, b) if ink(x, (ys[0] + ys[-1]) // 2)]
        out += "{" if sum(mid) / len(mid) < (a + b) / 2 else "}"
        continue
    n = round((b - a) / 70)          # touching flags are split evenly
    for i in range(n):
        x0, x1 = a + (b - a) * i // n, a + (b - a) * (i + 1) // n
        y0 = next(y for y in range(100) if sum(ink(x, y) for x in range(x0, x1)) > 2)
        y1 = y0 + x1 - x0            # the flags are square
        grid = " ".join("".join(colour(px[int(x0 + (x1 - x0) * (c + .5) / 5), int(y0 + (y1 - y0) * (r + .5) / 5)])
                                for c in range(5)) for r in range(5))
        miss = lambda t: sum(p not in "?" + g for p, g in zip(ICS[t], grid))
        out += min(ICS, key=miss)
print(out)
PY
