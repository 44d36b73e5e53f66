#!/bin/bash
# Reduce each number in message.txt mod 37 and map 0-25 to A-Z, 26-35 to 0-9, 36 to '_'.
python3 -c '
cs = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
print("picoCTF{%s}" % "".join(cs[int(n) % 37] for n in open("message.txt").read().split()))'
