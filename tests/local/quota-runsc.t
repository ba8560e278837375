#!/bin/bash
# Pull quota, sparse files and interrupted pulls under gVisor; see quota.sh.
RT=runsc
. "$(dirname "$0")/quota.sh"
