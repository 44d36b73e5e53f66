#!/bin/bash
# Trace chall_4.S for n=3251372985: func1 (n>100) calls func2(n+100); func2 (>499) calls func5(x+13); func5 returns func8(x)=x+2.
n=3251372985
c1=$(sed -n '/^func1:/,/^func2:/s/^\tadd\tw0, w0, \([0-9]*\)$/\1/p' chall_4.S)
c2=$(sed -n '/^func2:/,/^func3:/s/^\tadd\tw0, w0, \([0-9]*\)$/\1/p' chall_4.S)
c8=$(sed -n '/^func8:/,/^main:/s/^\tadd\tw0, w0, \([0-9]*\)$/\1/p' chall_4.S)
x=$(( (n + c1) & 0xffffffff ))
(( n > 100 && x > 499 )) && printf 'picoCTF{%08x}\n' $(( (x + c2 + c8) & 0xffffffff ))
