#!/bin/bash
# The flag is a plain printable string inside the binary.
strings -a strings | grep -o 'picoCTF{[^}]*}'
