#!/bin/bash
# Run code.py next to codebook.txt; it derives the key from the codebook and prints the flag.
python3 code.py
