#!/bin/bash
# encrypted.txt is a Caesar rotation: try all 26 shifts and keep the one that yields the picoCTF prefix.
for s in $(seq 0 25); do
  a=abcdefghijklmnopqrstuvwxyz; r=${a:s}${a:0:s}
  tr "${r}${r^^}" "${a}${a^^}" < encrypted.txt
done | grep -o 'picoCTF{[^}]*}'
