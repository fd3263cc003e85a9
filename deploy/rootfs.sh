#!/bin/sh
# rootfs.sh OUT: everything deploy/Dockerfile's final stage (FROM scratch)
# copies from its build stage, written under OUT. Run from the repository root
# with Go and the CA certificates at /etc/ssl/certs/ca-certificates.crt.
# The Dockerfile's build stage runs it in golang:1.26 (OUT=/out); test/image.sh
# runs it on the test machine (OUT=DIR/out) and builds the same Dockerfile with
# DIR in place of the build stage (buildah bud --build-context build=DIR), so
# the image the tests run has the final stage users build.
#
#   OUT/root/     copied to / as root's: the static binary /nodeid-broker, the
#                 CA certificates (HTTPS to S3), /etc/passwd and /etc/group
#                 with the nonroot user (65532) as distroless/static has
#                 them, Go's time zone database (ENV ZONEINFO), /tmp (1777)
#                 and /home
#   OUT/nodeid/        the volume's mount point, copied as 65532's
#   OUT/home/nonroot/  nonroot's home directory, copied as 65532's
set -eu
umask 022

out=${1:?usage: rootfs.sh OUT}
root=$out/root
mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/home" "$out/nodeid" "$out/home/nonroot"
# CGO_ENABLED=0: a static binary (pure-Go DNS resolver, no libc), which
# deploy/deploy_test.go checks on every test run.
CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o "$root/nodeid-broker" ./cmd/nodeid-broker
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
cp "$(go env GOROOT)/lib/time/zoneinfo.zip" "$root/zoneinfo.zip"
cat >"$root/etc/passwd" <<'END'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
END
cat >"$root/etc/group" <<'END'
root:x:0:
nobody:x:65534:
nonroot:x:65532:
END
chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/ssl/certs/ca-certificates.crt" "$root/zoneinfo.zip"
chmod 1777 "$root/tmp"
