#!/bin/bash
# Decode the hex byte 0x70 from the question into its ASCII character.
printf 'picoCTF{%b}\n' '\x70'
