#!/bin/bash
# Import serpentine.py as a module (main is guarded) and call its hidden print_flag function.
python3 -c 'import serpentine; serpentine.print_flag()'
