#!/usr/bin/env bash
# notesting.sh (run by lint.sh): no package of the main module imports
# "testing" outside its _test.go files, except test support under an
# .../internal/testutil/... path. A package that does links the testing
# package (and its flags) into whatever imports it, and is test support
# living where product code lives; it belongs under internal/testutil.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
GO=${GO:-go}

# .Imports lists what the package's non-test files import (.TestImports and
# .XTestImports hold the _test.go files' imports).
offenders=$("$GO" list -f '{{.ImportPath}} {{join .Imports " "}}' ./... |
  awk '$1 !~ /\/internal\/testutil(\/|$)/ { for (i = 2; i <= NF; i++) if ($i == "testing") { print "  " $1; break } }')
if [[ -n $offenders ]]; then
  echo "lint: these packages import \"testing\" outside _test.go files; move them under internal/testutil/:" >&2
  echo "$offenders" >&2
  exit 1
fi
echo "lint: no package outside internal/testutil imports \"testing\""
