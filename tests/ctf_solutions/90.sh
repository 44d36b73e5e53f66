#!/bin/bash
# ROT13-decode the ciphertext given in the task's question.
echo 'cvpbPGS{abg_gbb_onq_bs_n_ceboyrz}' | tr 'A-Za-z' 'N-ZA-Mn-za-m'
