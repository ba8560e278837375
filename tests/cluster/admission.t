#!/bin/bash
# cluster/admission.yaml's CEL rules, evaluated (tests/kube/cel.py) on the pools
# `sbx render-pool` prints (they pass) and on one variant per kind of violation (each is
# denied by its own rule): tests/cluster/admission_cases.py.
. "$(dirname "$0")/../lib/tap.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
python3 -c 'import yaml' 2>/dev/null || skip_all "python3-yaml is not installed (make deps)"
trap - EXIT
rm -rf "$SBX_TEST_TMP"
exec python3 "$top/tests/cluster/admission_cases.py" "$top" "$SBX"
