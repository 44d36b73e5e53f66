#!/bin/bash
# Undoes VaultDoor8's bit-pair swaps (applied in reverse order) on the expected bytes to recover the password.
python3 - <<'PY'
import re
src = open("VaultDoor8.java").read()
body = re.search(r"scramble\(String password\)(.*?)return a;", src, re.S).group(1)
body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)          # drop the decoy commented-out swaps
swaps = [tuple(map(int, p)) for p in re.findall(r"switchBits\(c,\s*(\d+),\s*(\d+)\)", body)]
expected = [int(h, 16) for h in re.findall(r"0x[0-9A-Fa-f]{2}", src.split("char[] expected")[1])]
def swap(c, p1, p2):
    b1, b2 = (c >> p1) & 1, (c >> p2) & 1
    return c & ~((1 << p1) | (1 << p2)) | (b1 << p2) | (b2 << p1)
out = ""
for c in expected:
    for p1, p2 in reversed(swaps):
        c = swap(c, p1, p2)
    out += chr(c)
print("picoCTF{" + out + "}")
PY
