#!/bin/bash
# Decodes the certificate signing request and reads the flag from its subject Common Name.
openssl req -in readmycert.csr -noout -subject | grep -o 'picoCTF{[^}]*}'
