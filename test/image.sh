#!/usr/bin/env bash
# image.sh: build the broker's container image from deploy/Dockerfile with
# buildah and print its image ID, for deploy/image_test.go (TestImageRuns,
# through NODEID_TEST_IMAGE), which runs it with podman. Installs buildah,
# podman and runc from Debian's packages when missing (apt-get, as root).
#
# There is no registry to pull golang:1.26 from here, so the Dockerfile's build
# stage is replaced rather than run: deploy/rootfs.sh (what that stage runs)
# writes its output on this machine, and `buildah bud --build-context
# build=DIR` stands DIR in for the stage named build. The final stage, FROM
# scratch, is deploy/Dockerfile's own, unchanged.
#
# Containers' storage is vfs (no overlay mounts needed) and the machine's
# (/var/lib/containers). The tag is localhost/nodeid-broker:test-HASH, HASH
# naming this checkout, so that checkouts building at the same time keep
# their own images; the image it named before is removed. 4 to 8 s on 2
# shared cores once the Go build cache is warm (deploy/README.md).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
TAG=localhost/nodeid-broker:test-$(pwd -P | sha256sum | cut -c1-12)
readonly TAG
began=$SECONDS

missing=()
for tool in buildah podman runc; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
	if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
		echo "image.sh: ${missing[*]} missing: apt-get install ${missing[*]} (as root)" >&2
		exit 1
	fi
	echo "installing ${missing[*]} (apt-get)" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/nodeid-image.XXXXXX")
trap 'rm -rf "$dir"' EXIT
sh deploy/rootfs.sh "$dir/out"

old=$(podman --storage-driver vfs image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)
# --pull=never: FROM scratch pulls nothing, and the build stage is DIR.
# --format docker: the OCI format has no HEALTHCHECK.
buildah --storage-driver vfs bud --quiet --pull=never --format docker \
	--build-context build="$dir" --iidfile "$dir/iid" \
	-f deploy/Dockerfile -t "$TAG" . >/dev/null
id=$(<"$dir/iid")
id=${id#sha256:}
if [[ -n $old && $old != "$id" ]]; then
	podman --storage-driver vfs rmi "$old" >/dev/null 2>&1 || true # in use by a container: kept
fi
echo "image.sh: built $TAG ($id) in $((SECONDS - began)) s" >&2
echo "$id"
