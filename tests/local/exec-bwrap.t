#!/bin/bash
# sbx exec and sessions under bubblewrap; see exec.sh.
RT=bwrap
. "$(dirname "$0")/exec.sh"
