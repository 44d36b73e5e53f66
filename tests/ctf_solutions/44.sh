#!/bin/bash
# The password is the literal compared in checkPassword; wrap it in picoCTF{}.
echo "picoCTF{$(sed -n 's/.*password.equals("\([^"]*\)").*/\1/p' VaultDoorTraining.java)}"
