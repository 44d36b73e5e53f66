#!/bin/bash
# Run a copy of bloat.flag.py with the password check call commented out; it then XOR-decrypts flag.txt.enc.
sed 's/^arg133(arg432)/#&/' bloat.flag.py > /tmp/bloat_nocheck.py
echo anything | python3 /tmp/bloat_nocheck.py | tr -d '\r' | tail -n 1
