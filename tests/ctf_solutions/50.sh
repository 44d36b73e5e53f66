#!/bin/bash
# Unpacks the eight big-endian ints compared in checkPassword into 4 ASCII chars each and wraps them in picoCTF{}.
python3 - <<'PY'
import re, struct
src = open("VaultDoor7.java").read()
nums = [int(n) for n in re.findall(r"x\[\d\] == (\d+)", src)]
print("picoCTF{" + b"".join(struct.pack(">I", n) for n in nums).decode() + "}")
PY
