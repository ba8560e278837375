#!/bin/bash
# The sandbox's limits under gVisor (runsc); see limits.sh.
RT=runsc
. "$(dirname "$0")/limits.sh"
