#!/bin/bash
# Extract files.zip and print the hidden uber-secret.txt found inside it.
unzip -oq files.zip -d /tmp/t37 && cat "$(find /tmp/t37 -name uber-secret.txt | head -n1)"
