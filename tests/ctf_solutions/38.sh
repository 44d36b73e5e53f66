#!/bin/bash
# Extract big-zip-files.zip and grep the thousands of extracted files for the flag pattern.
unzip -oq big-zip-files.zip -d /tmp/t38 && grep -rhoa 'picoCTF{[^}]*}' /tmp/t38 | head -n1
