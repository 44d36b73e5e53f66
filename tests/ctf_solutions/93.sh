#!/bin/bash
# Each 3-char block was rotated ("The" became "heT"), so move each block's last char back to the front.
sed 's/\(.\)\(.\)\(.\)/\3\1\2/g' message.txt | grep -o 'picoCTF{[^}]*}'
