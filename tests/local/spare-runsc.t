#!/bin/bash
# The warm spare under gVisor (runsc); see spare.sh.
RT=runsc
. "$(dirname "$0")/spare.sh"
