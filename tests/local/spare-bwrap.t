#!/bin/bash
# The warm spare under bubblewrap; see spare.sh.
RT=bwrap
. "$(dirname "$0")/spare.sh"
