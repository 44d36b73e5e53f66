#!/bin/bash
# The flag is a plain text string appended to garden.jpg.
strings garden.jpg | grep -o 'picoCTF{[^}]*}'
