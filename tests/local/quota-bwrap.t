#!/bin/bash
# Pull quota, sparse files and interrupted pulls under bubblewrap; see quota.sh.
RT=bwrap
. "$(dirname "$0")/quota.sh"
