#!/usr/bin/env bash
# Builds the blockfs docker images without any registry:
#   1. static binaries (CGO_ENABLED=0) of every cmd/* and of deploy/healthcheck
#      into deploy/bin/rootfs/usr/local/bin, plus a minimal /etc/passwd, /etc/group
#      and /tmp, on the host;
#   2. the image blockfs:local, FROM scratch with that rootfs copied in;
#   3. with --prometheus (or BLOCKFS_BUILD_PROMETHEUS=1): blockfs-prometheus:local,
#      FROM scratch with the host's Debian /usr/bin/prometheus and the few shared
#      libraries it links (apt-get install prometheus first).
# Flags: --no-image builds only the binaries; --prometheus also builds the prometheus image.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=$root/deploy/bin
rootfs=$bin/rootfs

images=1
prom=${BLOCKFS_BUILD_PROMETHEUS:-0}
for a in "$@"; do
	case $a in
	--no-image) images=0 ;;
	--prometheus) prom=1 ;;
	*) echo "build.sh: unknown flag $a" >&2; exit 2 ;;
	esac
done

rm -rf "$rootfs"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/data" "$rootfs/out"
chmod 1777 "$rootfs/tmp"
# The clients and the namenode take the OS user name (os/user reads /etc/passwd
# when built without cgo); root is also the namenodes' default superuser.
printf 'root:x:0:0:root:/root:/nonexistent\nnobody:x:65534:65534:nobody:/nonexistent:/nonexistent\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nsupergroup:x:0:root\nnogroup:x:65534:\n' >"$rootfs/etc/group"

# The servers and the health check must build; the other commands are built
# when they can be (one still being written may not compile yet: .ci/run's go vet
# catches that), and deploy/smoke.sh says what it had to skip.
core=(./cmd/namenode ./cmd/datanode ./deploy/healthcheck)
echo "build.sh: building ${core[*]}" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$rootfs/usr/local/bin/" "${core[@]}"
for d in cmd/*/; do
	d=${d%/}
	case $d in cmd/namenode | cmd/datanode) continue ;; esac
	if ! compgen -G "$d/*.go" >/dev/null; then
		echo "build.sh: skipping $d (no Go files yet)" >&2
		continue
	fi
	echo "build.sh: building ./$d" >&2
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$rootfs/usr/local/bin/" "./$d" ||
		echo "build.sh: WARNING: ./$d does not build; its binary is left out of the image" >&2
done
ls -l "$rootfs/usr/local/bin" >&2

if [ "$images" = 0 ]; then
	exit 0
fi
docker_build() { # tag context
	# BuildKit needs the buildx plugin, which Debian's docker.io lacks; the
	# classic builder does a FROM scratch + COPY build just as well.
	DOCKER_BUILDKIT=0 docker build -q -t "$1" "$2" >/dev/null 2>"$bin/docker-build.log" || {
		cat "$bin/docker-build.log" >&2
		return 1
	}
	echo "build.sh: built image $1" >&2
}
cp deploy/Dockerfile "$bin/Dockerfile"
printf 'prometheus\ndocker-build.log\n' >"$bin/.dockerignore"
docker_build blockfs:local "$bin"

if [ "$prom" = 1 ]; then
	p=$(command -v prometheus || true)
	if [ -z "$p" ]; then
		echo "build.sh: no prometheus binary on the host (apt-get install prometheus); skipping its image" >&2
		exit 0
	fi
	pr=$bin/prometheus
	rm -rf "$pr"
	mkdir -p "$pr/rootfs/bin" "$pr/rootfs/etc/prometheus" "$pr/rootfs/prometheus" "$pr/rootfs/tmp"
	chmod 1777 "$pr/rootfs/tmp"
	cp "$p" "$pr/rootfs/bin/prometheus"
	cp "$rootfs/etc/passwd" "$rootfs/etc/group" "$pr/rootfs/etc/"
	# Debian's prometheus is dynamically linked (libc only): copy what ldd names,
	# the loader included, to the same paths.
	ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
		mkdir -p "$pr/rootfs$(dirname "$lib")"
		cp -L "$lib" "$pr/rootfs$lib"
	done
	cp deploy/prometheus/Dockerfile "$pr/Dockerfile"
	docker_build blockfs-prometheus:local "$pr"
fi
