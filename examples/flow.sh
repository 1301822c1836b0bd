#!/bin/sh
# examples/flow.sh - placeholder for the README's flow (the real script lands
# with the README rework): checks that the service at U answers.
set -eu
U=${U:-http://127.0.0.1:8080}
curl -fsS "$U/healthz"; echo
curl -fsS "$U/readyz"; echo
