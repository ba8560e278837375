#!/bin/bash
# Each command a fresh bash, under bubblewrap; see fresh.sh.
RT=bwrap
. "$(dirname "$0")/fresh.sh"
