#!/bin/bash
# eax is loaded from the single immediate stored in the dump; print it in decimal.
v=$(grep -o '0x[0-9a-f]*$' disassembler-dump0_b.txt | head -1)
echo "picoCTF{$((v))}"
