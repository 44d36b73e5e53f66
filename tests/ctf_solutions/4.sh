#!/bin/bash
# The flag is the content of the file named flag.
cat flag
