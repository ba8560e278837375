#!/bin/bash
# Nothing the sandbox makes is a setuid, special or world-writable host file, under bubblewrap; see
# hostperm.sh.
RT=bwrap
. "$(dirname "$0")/hostperm.sh"
