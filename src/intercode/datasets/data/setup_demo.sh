#!/bin/bash
# File system of the embedded bash-demo dataset (written for intercode).
mkdir -p /project/src /project/docs /project/data/raw /project/logs
printf 'alpha\nbeta\ngamma\n' > /project/data/raw/letters.txt
printf 'id,name,score\n1,ada,93\n2,brian,78\n3,chen,88\n' > /project/data/scores.csv
printf 'def main():\n    print("hello from demo")\n' > /project/src/app.py
printf 'def helper(x):\n    return x * 2\n' > /project/src/util.py
printf '# Demo project\nA tiny tree for the intercode demo.\n' > /project/docs/README.md
printf 'INFO start\nWARN disk low\nINFO done\nERROR failed to open\n' > /project/logs/app.log
printf 'INFO start\nINFO done\n' > /project/logs/old.log
touch -m -t 202001010000.00 /project/logs/old.log
chmod +x /project/src/app.py
