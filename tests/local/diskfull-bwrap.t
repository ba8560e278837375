#!/bin/bash
# A full sandbox space names its limit under bubblewrap; see diskfull.sh.
RT=bwrap
. "$(dirname "$0")/diskfull.sh"
