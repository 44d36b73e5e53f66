#!/bin/bash
# Replay the dump: local = init; if local <= limit add k else subtract k; eax = local.
f=disassembler-dump0_d.txt
init=$(sed -n 's/.*mov *DWORD PTR \[rbp-0x4\],\(0x[0-9a-f]*\).*/\1/p' $f)
limit=$(sed -n 's/.*cmp *DWORD PTR \[rbp-0x4\],\(0x[0-9a-f]*\).*/\1/p' $f)
sub=$(sed -n 's/.*sub *DWORD PTR \[rbp-0x4\],\(0x[0-9a-f]*\).*/\1/p' $f)
add=$(sed -n 's/.*add *DWORD PTR \[rbp-0x4\],\(0x[0-9a-f]*\).*/\1/p' $f)
echo "picoCTF{$(( init <= limit ? init + add : init - sub ))}"
