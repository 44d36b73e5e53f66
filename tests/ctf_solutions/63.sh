#!/bin/bash
# Unzips the archive and prints the flag from the file at the bottom of the deep directory tree.
unzip -qo Addadshashanammu.zip -d /tmp/t63 && find /tmp/t63 -type f -exec strings {} \; | grep -o 'picoCTF{[^}]*}'
