#!/usr/bin/env bash
# image.sh (`make image`): the collector image.
#  - Here (no docker engine, no registry): the testbed's registry-free builder
#    (test/testbed/images.sh --no-import) writes svctrace.local/collector:dev as
#    a docker-archive into $SVCTRACE_CACHE/images/collector.tar; then
#    test/release/imagecheck verifies it has the contents the release
#    Dockerfile gives (packages from build/collector/packages.txt, binary path,
#    entrypoint, no apt lists or docs) and prints its size.
#  - With SVCTRACE_IMAGE_BUILDER=docker (a release machine with buildx): the
#    multi-arch release image from build/collector/Dockerfile, loaded nowhere
#    (add --push through DOCKER_BUILD_ARGS).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
t0=$SECONDS

if [[ ${SVCTRACE_IMAGE_BUILDER:-testbed} == docker ]]; then
  # The tag `kubectl svctrace version` names as its default collector image
  # (cmd/cli.DefaultCollectorImage): the release version without its "v".
  version=$(git describe --tags --always --dirty)
  version=${version#v}
  # shellcheck disable=SC2086
  docker buildx build --platform linux/amd64,linux/arm64 \
    --build-arg VERSION="$version" --build-arg COMMIT="$(git rev-parse HEAD)" \
    --build-arg DATE="$(date -u +%FT%TZ)" \
    -f build/collector/Dockerfile -t "${IMAGE:-ghcr.io/svctrace/svctrace-collector:$version}" ${DOCKER_BUILD_ARGS:-} .
  echo "image.sh: built in $((SECONDS - t0))s"
  exit 0
fi

[[ -f test/testbed/images.sh ]] || { echo "image.sh: test/testbed/images.sh (the registry-free builder) is missing" >&2; exit 1; }
images_dir=$(bash -c 'source test/testbed/lib.sh && echo "$IMAGES_DIR"')
coredns=$(bash -c 'source test/testbed/lib.sh && echo "$COREDNS_BIN/coredns"')
# images.sh packs every testbed image, CoreDNS included: build the pinned
# binaries first when they are missing (cached; the e2e tests need them anyway).
[[ -x $coredns ]] || bash test/testbed/build.sh
bash test/testbed/images.sh --no-import
echo "image.sh: testbed images built in $((SECONDS - t0))s"
go run ./test/release/imagecheck -image "$images_dir/collector.tar" \
  -dockerfile build/collector/Dockerfile -packages build/collector/packages.txt
ls -l "$images_dir/collector.tar" | awk '{printf "image.sh: %s is %.1f MiB on disk\n", $NF, $5/1048576}'
