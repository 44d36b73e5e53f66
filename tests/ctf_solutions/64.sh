#!/bin/bash
# Reads the strings of the packet capture; the flag is spelled with spaces between characters, so they are removed.
strings network-dump.flag.pcap | grep 'p i c o' | tr -d ' '
