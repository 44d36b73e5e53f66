#!/bin/bash
# Base64-decodes the file repeatedly until a picoCTF flag appears.
data=$(cat enc_flag)
until grep -q 'picoCTF{' <<<"$data"; do data=$(base64 -d <<<"$data"); done
grep -o 'picoCTF{[^}]*}' <<<"$data"
