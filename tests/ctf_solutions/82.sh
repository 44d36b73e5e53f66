#!/bin/bash
# func1 in chall_2.S adds a constant to an accumulator once per loop pass, n times, so the program prints n*step mod 2^32.
step=$(sed -n 's/^\tadd\tw0, w0, \([0-9]*\)$/\1/p' chall_2.S | head -n1)
printf 'picoCTF{%08x}\n' $(( 3736234946 * step & 0xffffffff ))
