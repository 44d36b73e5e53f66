#!/bin/bash
# Feed the ROT13 text quoted in the task to the provided rot13.py, which decodes it.
echo 'cvpbPGS{abg_gbb_onq_bs_n_ceboyrz}' | python3 rot13.py
