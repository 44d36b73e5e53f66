#!/bin/bash
# Take each number in message.txt mod 41, invert it mod 41, and map 1-26 to A-Z, 27-36 to 0-9, 37 to '_'.
python3 -c '
cs = "_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
print("picoCTF{%s}" % "".join(cs[pow(int(n) % 41, -1, 41)] for n in open("message.txt").read().split()))'
