#!/bin/bash
# Run ende.py in decrypt mode on flag.txt.en with the password stored in pw.txt.
python3 ende.py -d flag.txt.en "$(cat pw.txt)"; echo
