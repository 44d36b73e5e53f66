#!/bin/bash
# For each ciphertext letter, find in table.txt the column whose entry in the key letter's row is that letter.
python3 - <<'PY'
lines = open("table.txt").read().splitlines()
cols = lines[0].split()
rows = {l.split('|')[0].strip(): l.split('|')[1].split() for l in lines[2:] if '|' in l}
ct, key = "UFJKXQZQUNB", "SOLVECRYPTO"
print("picoCTF{%s}" % "".join(cols[rows[k].index(c)] for c, k in zip(ct, key)))
PY
