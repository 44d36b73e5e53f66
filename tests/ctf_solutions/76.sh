#!/bin/bash
# Trace asm1(0x6fa) in test.S: 0x6fa > 0x3a2 and equals the 0x6fa compare, so the result is arg - 0x12.
arg=0x6fa
sub=$(grep -A3 "cmp .*,$arg" test.S | grep -o 'sub *eax,0x[0-9a-f]*' | grep -o '0x[0-9a-f]*')
printf '0x%x\n' $((arg - sub))
