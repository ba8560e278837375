#!/bin/bash
# AGENT_SANDBOX_LOCAL_NETWORK=allowlist under bubblewrap; see egress.sh.
RT=bwrap
. "$(dirname "$0")/egress.sh"
