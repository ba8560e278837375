#!/bin/bash
# Nothing the sandbox makes is a setuid, special or world-writable host file, under gVisor; see
# hostperm.sh.
RT=runsc
. "$(dirname "$0")/hostperm.sh"
