#!/bin/bash
# Each command a fresh bash, under gVisor (runsc); see fresh.sh.
RT=runsc
. "$(dirname "$0")/fresh.sh"
