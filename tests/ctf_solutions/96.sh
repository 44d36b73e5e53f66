#!/bin/bash
# Find cultiris's line number in usernames.txt, take the same line of passwords.txt and ROT13-decode it.
tar xf leak.tar
n=$(tr -d '\r' < leak/usernames.txt | grep -n -x cultiris | cut -d: -f1)
sed -n "${n}p" leak/passwords.txt | tr -d '\r' | tr 'A-Za-z' 'N-ZA-Mn-za-m'
