#!/bin/bash
# The sandbox's limits under bubblewrap; see limits.sh.
RT=bwrap
. "$(dirname "$0")/limits.sh"
