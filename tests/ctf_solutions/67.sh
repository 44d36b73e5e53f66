#!/bin/bash
# Extracts the PDF's text layer (including the badly redacted parts) and greps the flag.
pdftotext Financial_Report_for_ABC_Labs.pdf - | grep -o 'picoCTF{[^}]*}'
