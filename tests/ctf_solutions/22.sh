#!/bin/bash
# Base64-decode the string given in the question and wrap it in picoCTF{}.
echo "picoCTF{$(echo bDNhcm5fdGgzX3IwcDM1 | base64 -d)}"
