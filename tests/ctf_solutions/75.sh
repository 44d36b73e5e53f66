#!/bin/bash
# Emulate the dump: eax = first stored constant * second stored constant + added immediate, in decimal.
a=$(grep 'rbp-0xc\],0x' disassembler-dump0_c.txt | grep -o '0x[0-9a-f]*$')
b=$(grep 'rbp-0x8\],0x' disassembler-dump0_c.txt | grep -o '0x[0-9a-f]*$')
c=$(grep 'add *eax' disassembler-dump0_c.txt | grep -o '0x[0-9a-f]*$')
echo "picoCTF{$((a * b + c))}"
