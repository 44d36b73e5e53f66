#!/bin/bash
# func1 adds 3 (func2) for every set bit of the argument, so the result is 3 * popcount(1048110976).
python3 -c "print('picoCTF{%08x}' % (bin(1048110976).count('1') * 3))"
