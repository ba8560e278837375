#!/bin/bash
# AGENT_SANDBOX_LOCAL_NETWORK=allowlist under gVisor; see egress.sh.
RT=runsc
. "$(dirname "$0")/egress.sh"
