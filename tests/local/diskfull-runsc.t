#!/bin/bash
# A full sandbox space names its limit under gVisor; see diskfull.sh.
RT=runsc
. "$(dirname "$0")/diskfull.sh"
