#!/bin/bash
# Makes the program executable, runs it with the argument "Hello!" as the query suggests and keeps the printed flag.
chmod +x run && ./run 'Hello!' | grep -o 'picoCTF{[^}]*}'
