#!/bin/bash
# Read the base64 License field of the JPEG's XMP metadata with exiftool and decode it.
exiftool -s3 -License cat.jpg | base64 -d; echo
