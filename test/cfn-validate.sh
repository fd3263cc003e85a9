#!/usr/bin/env bash
# cfn-validate.sh: put AWS CloudFormation Validate (the npm package
# @aws/cloudformation-validate: AWS's resource schemas and rules compiled to
# WASM, offline) in the server cache and print the directory it is installed
# in. deploy/cloudformation/validate.sh (the documented command) and
# deploy/cloudformation_test.go validate the template with it. It needs Node.js 20 or later and npm.
#
# Why this tool: AWS's cfn-lint is a Python package and PyPI is not reachable
# from here; this is AWS's own offline validator, on npm, and it runs
# cfn-lint's rules (CFN_LINT findings) beside the resource schemas (SCHEMA).
#
#   NODEID_SERVER_CACHE  where binaries are cached (default ~/.cache/nodeid-servers)
set -euo pipefail

readonly PACKAGE=@aws/cloudformation-validate@1.9.0-beta

cache=${NODEID_SERVER_CACHE:-$HOME/.cache/nodeid-servers}
dir=$cache/cfn-validate
if [[ -f $dir/version && "$(<"$dir/version")" == "$PACKAGE" && -d $dir/node_modules/@aws/cloudformation-validate ]]; then
	echo "$dir"
	exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
printf '{"private": true}\n' >"$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --save-exact "$PACKAGE" >&2
printf '%s\n' "$PACKAGE" >"$dir/version"
echo "$dir"
