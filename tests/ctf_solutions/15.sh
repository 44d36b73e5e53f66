#!/bin/bash
# Call crackme.py's own decode_secret (ROT47) on bezos_cc_secret, skipping the interactive choose_greatest() call.
python3 -c 'src = open("crackme.py").read(); exec(src[:src.rindex("choose_greatest()")]); decode_secret(bezos_cc_secret)'
