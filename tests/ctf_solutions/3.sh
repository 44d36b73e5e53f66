#!/bin/bash
# Read the two kinds of whitespace (EM SPACE = 0, ASCII space = 1) as bits and decode them to ASCII.
python3 - <<'PY' | grep -ao 'picoCTF{[^}]*}'
text = open("whitepages_task_3.txt", encoding="utf-8").read()
bits = "".join("0" if ch == "\u2003" else "1" for ch in text)
print(bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits) - 7, 8)).decode())
PY
