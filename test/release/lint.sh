#!/usr/bin/env bash
# lint.sh (`make lint`): gofmt, a tidy go.mod/go.sum, go vet, the pinned
# staticcheck, trace's layout rules and no "testing" in non-test code
# (notesting.sh), over the main module.
# Exits non-zero on the first check that finds something.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
GO=${GO:-go}
t0=$SECONDS

# gofmt: every Go file of the main module (the testbed's wrapper module holds no code of ours).
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard '*.go' | grep -v '^test/testbed/k8s/') 2>&1 || true)
if [[ -n $unformatted ]]; then
  echo "lint: gofmt -l reports (run gofmt -w on them):" >&2
  echo "$unformatted" >&2
  exit 1
fi
echo "lint: gofmt ok ($((SECONDS - t0))s)"

# Builds run with Go's default -mod=readonly: go.mod and go.sum must be exactly
# what `go mod tidy` makes of the code, or a build fails (a missing sum) or the
# files carry requirements nothing uses.
t=$SECONDS
if ! tidy_diff=$("$GO" mod tidy -diff 2>&1); then
  echo "lint: go.mod/go.sum are not tidy; run 'go mod tidy' and commit the result. go mod tidy -diff:" >&2
  echo "$tidy_diff" >&2
  exit 1
fi
echo "lint: go mod tidy leaves go.mod and go.sum unchanged ($((SECONDS - t))s)"

# Nested modules that build against this checkout (a replace of the main
# module) inherit its go directive and requirements: a change here can leave
# them untidy, and `make test-ebpf` then stops on "updates to go.mod needed".
t=$SECONDS
for mod in $(grep -l '^replace github.com/svctrace/kubectl-svctrace ' $(git ls-files '*/go.mod')); do
  dir=$(dirname "$mod")
  if ! tidy_diff=$(cd "$dir" && "$GO" mod tidy -diff 2>&1); then
    echo "lint: $dir/go.mod is not tidy against this module; run 'cd $dir && go mod tidy'. go mod tidy -diff:" >&2
    echo "$tidy_diff" | grep -v '^go: downloading' >&2
    exit 1
  fi
done
echo "lint: nested modules that replace this one are tidy ($((SECONDS - t))s)"

t=$SECONDS
"$GO" vet ./...
echo "lint: go vet ok ($((SECONDS - t))s)"

# The plugin ships for darwin and windows too (make dist): Linux-only code
# (x/sys/unix netfilter constants, google/nftables) must stay out of its
# import graph or behind build tags. Type-checking per OS finds it in seconds
# once the build cache is warm, instead of at the end of a snapshot.
t=$SECONDS
for os in darwin windows; do
  GOOS=$os GOARCH=arm64 "$GO" vet ./cmd/kubectl-svctrace || { echo "lint: kubectl-svctrace does not build for $os (see above)" >&2; exit 1; }
done
echo "lint: kubectl-svctrace type-checks for darwin and windows ($((SECONDS - t))s)"

t=$SECONDS
staticcheck=$(bash test/release/tools.sh staticcheck)
"$staticcheck" -checks inherit ./...
echo "lint: staticcheck $("$staticcheck" -version | awk '{print $2}') ok ($((SECONDS - t))s)"

# The layout rules of trace (trace/layout_test.go): sub-packages and nodes
# never import trace, datapath modes only in trace/programmed, a check code's
# prefix names the file that emits it, file names are domain nouns.
t=$SECONDS
"$GO" test ./trace/ -count=1 -run '^(TestSubpackagesNeverImportTrace|TestNodesNeverImportTrace|TestDatapathModesOnlyInProgrammed|TestCodePrefixNamesTheFile|TestFileNamesAreDomainNouns)$'
echo "lint: trace layout rules ok ($((SECONDS - t))s)"

bash test/release/notesting.sh
echo "lint: all ok in $((SECONDS - t0))s"
