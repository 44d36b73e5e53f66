#!/bin/bash
# Run convertme.py, read the random number it asks about, answer it in binary, and extract the flag.
python3 - <<'PY'
import re, subprocess
p = subprocess.Popen(["python3", "-u", "convertme.py"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
num = int(re.search(r"\d+", p.stdout.readline()).group())
out = p.communicate(bin(num)[2:] + "\n")[0]
print(re.search(r"picoCTF\{[^}]*\}", out).group())
PY
