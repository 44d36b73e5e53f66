#!/bin/bash
# The pptm is a zip; its ppt/slideMasters/hidden member is spaced-out base64 of "flag: <flag>".
unzip -p "Forensics is fun.pptm" ppt/slideMasters/hidden | tr -d ' \n' | python3 -c "import sys,base64; s=sys.stdin.read(); print(base64.b64decode(s + '=' * (-len(s) % 4)).decode().split(': ')[-1])"
