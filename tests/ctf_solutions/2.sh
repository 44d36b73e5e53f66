#!/bin/bash
# Dump the TCP payloads of the capture with tshark, decode them from hex and grep the flag.
tshark -r trace_task_2.pcap -Y 'tcp.payload contains "picoCTF"' -T fields -e tcp.payload 2>/dev/null \
  | xxd -r -p | grep -ao 'picoCTF{[^}]*}' | tail -n 1
