#!/bin/bash
# The dump's only write to eax is a "mov eax,<imm>"; print that immediate in decimal.
v=$(sed -n 's/.*mov *eax,\(0x[0-9a-f]*\).*/\1/p' disassembler-dump0_a.txt | tail -n1)
echo "picoCTF{$((v))}"
