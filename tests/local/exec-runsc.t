#!/bin/bash
# sbx exec and sessions under gVisor (runsc); see exec.sh.
RT=runsc
. "$(dirname "$0")/exec.sh"
