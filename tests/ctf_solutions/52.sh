#!/bin/bash
# Makes the provided program executable, runs it and keeps the flag it prints.
chmod +x run && ./run | grep -o 'picoCTF{[^}]*}'
