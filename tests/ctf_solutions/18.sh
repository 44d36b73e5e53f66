#!/bin/bash
# Convert 0x3D from the question to decimal with shell arithmetic.
echo "picoCTF{$((0x3D))}"
