#!/bin/bash
# Grep the large text file for the flag pattern.
grep -o 'picoCTF{[^}]*}' file
