#!/bin/bash
# Rebuild the trial key: static prefix plus sha256("FRASER") hex digits at the indices check_key() tests, in order.
python3 - <<'PY'
import hashlib, re
src = open("keygenme-trial.py").read()
ns = {}
for name in ("username_trial", "key_part_static1_trial", "key_part_static2_trial"):
    ns[name] = re.search(name + r' = "(.*)"', src).group(1)
digest = hashlib.sha256(ns["username_trial"].encode()).hexdigest()
body = src[src.index("def check_key"):src.index("def decrypt_full_version")]
dynamic = "".join(digest[int(i)] for i in re.findall(r"hexdigest\(\)\[(\d+)\]", body))
print(ns["key_part_static1_trial"] + dynamic + ns["key_part_static2_trial"])
PY
