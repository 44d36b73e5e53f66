#!/bin/bash
# Split every 16-bit character of enc back into its high and low bytes (the two packed flag characters).
python3 -c 'print("".join(chr(ord(c) >> 8) + chr(ord(c) & 0xFF) for c in open("enc", encoding="utf-8").read().strip()))'
