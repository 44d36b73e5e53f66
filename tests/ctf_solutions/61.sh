#!/bin/bash
# Greps the huge text file for the known flag prefix.
grep -o 'picoCTF{[^}]*}' anthem.flag.txt
