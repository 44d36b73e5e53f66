#!/bin/bash
# OCRs the noisy picture of numbers (one number per line to keep them apart) and maps each n to the n-th letter of the alphabet.
convert the_numbers.png -colorspace gray -threshold 20% -median 5 /tmp/clean.png
python3 - <<'PY'
from PIL import Image
im = Image.open("/tmp/clean.png").convert("L")
w, h = im.size
px = im.load()
ink = lambda xs, ys: sum(px[x, y] < 128 for x in xs for y in ys)
def runs(vals, thr):                      # [start, end) intervals where vals > thr
    out, i = [], 0
    while i < len(vals):
        if vals[i] > thr:
            j = i
            while j < len(vals) and vals[j] > thr: j += 1
            out.append([i, j]); i = j
        i += 1
    return out
boxes = []
for y0, y1 in runs([ink(range(w), [y]) for y in range(h)], 30):       # text lines
    glyphs = [g for g in runs([ink([x], range(y0, y1)) for x in range(w)], 0) if g[1] - g[0] >= 5]
    tokens = [glyphs[0][:]]
    for g in glyphs[1:]:                  # digits of one number are < 14 px apart
        if g[0] - tokens[-1][1] < 14: tokens[-1][1] = g[1]
        else: tokens.append(g[:])
    boxes += [(a, y0 - 4, b, y1 + 4) for a, b in tokens if ink(range(a, b), range(y0, y1)) > 100]
out = Image.new("L", (200, 80 * len(boxes) + 40), 255)
for i, box in enumerate(boxes):
    out.paste(im.crop(box), (30, 20 + 80 * i))
out.save("/tmp/stacked.png")
PY
tesseract /tmp/stacked.png - --psm 6 -c tessedit_char_whitelist='0123456789{}' 2>/dev/null | python3 -c '
import sys
toks = sys.stdin.read().split()
print("".join(t if t in "{}" else chr(96 + int(t)) for t in toks))'
