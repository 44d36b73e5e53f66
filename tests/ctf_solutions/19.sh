#!/bin/bash
# Convert 42 from the question to binary with Python's bin().
python3 -c 'print("picoCTF{%s}" % bin(42)[2:])'
