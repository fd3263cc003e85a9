#!/usr/bin/env bash
# validate.sh: validate the CloudFormation template offline, before a deploy:
#
#   bash deploy/cloudformation/validate.sh [TEMPLATE...]
#
# (default: nodeid-service.yaml beside this script). It installs AWS
# CloudFormation Validate (npm @aws/cloudformation-validate: AWS's resource
# schemas and cfn-lint's rules, compiled to WASM) once into the server cache
# with test/cfn-validate.sh, then runs validate.mjs: no AWS account, no
# credentials, no network after the install. Every finding of severity WARN
# or above is printed and fails. Exit 0 when there is none, 1 otherwise.
# Needs Node.js 20 or later and npm.
#
#   NODEID_SERVER_CACHE  where the validator is cached (default ~/.cache/nodeid-servers)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(bash "$here/../../test/cfn-validate.sh")
(($#)) || set -- "$here/nodeid-service.yaml"
exec node "$here/validate.mjs" "$dir" "$@"
