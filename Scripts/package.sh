#!/usr/bin/env bash
# Builds Herald's packages into dist/ (or --out DIR):
#   herald-<version>-linux-<arch>.tar.gz  the binary, with the Swift standard library and
#                                         Foundation linked in, and the deploy/ files;
#   herald_<version>_<debian-arch>.deb    /usr/bin/herald, the system user herald, /var/lib/herald,
#                                         /etc/herald/herald.env and the hardened systemd unit.
# The binary needs no Swift toolchain: only the C libraries Debian ships (libsqlite3, libsecp256k1,
# libstdc++, glibc), which the .deb depends on. Usage:
#   Scripts/package.sh [--configuration release|debug] [--out DIR] [--scratch-path DIR]
# release (the default) is what to ship; CI packages the debug build, whose packaging is the same.
# It builds in .build-package/ by default: swiftc compiles differently for a static standard
# library (each object names the static libraries it needs), and SwiftPM does not tell the two
# apart within one scratch path: objects of one kind fail to link as the other.
set -euo pipefail
cd "$(dirname "$0")/.."

configuration=release
out=dist
scratch=.build-package
while [ $# -gt 0 ]; do
  case "$1" in
    --configuration) configuration=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --scratch-path) scratch=$2; shift 2 ;;
    *) echo "usage: Scripts/package.sh [--configuration release|debug] [--out DIR] [--scratch-path DIR]" >&2; exit 2 ;;
  esac
done
case "$configuration" in release|debug) ;; *) echo "--configuration is release or debug" >&2; exit 2 ;; esac

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/HeraldCore/HeraldVersion.swift)
arch=$(uname -m)
debian_arch=$(dpkg --print-architecture)

# The standard library and Foundation linked statically.
swift build -c "$configuration" --product herald --static-swift-stdlib --disable-index-store --scratch-path "$scratch"
binary=$(swift build -c "$configuration" --scratch-path "$scratch" --show-bin-path)/herald

# No library of the toolchain may remain: the machine it goes to has none.
if ldd "$binary" | grep -E "libswift|libFoundation|libdispatch|libBlocksRuntime|_FoundationICU|/usr/lib/swift"; then
  echo "package: $binary still links the Swift runtime above" >&2
  exit 1
fi

mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The tarball: bin/herald and what an operator reads and installs beside it.
name=herald-$version-linux-$arch
mkdir -p "$work/$name/bin"
install -m 0755 "$binary" "$work/$name/bin/herald"
strip "$work/$name/bin/herald" 2>/dev/null || true
cp -R LICENSE NOTICE README.md CHANGELOG.md deploy docs "$work/$name/"
tar -C "$work" -czf "$out/$name.tar.gz" "$name"
echo "package: $out/$name.tar.gz"

# The Debian package.
root=$work/deb
install -d "$root/DEBIAN" "$root/usr/bin" "$root/lib/systemd/system" "$root/etc/herald" "$root/usr/share/doc/herald"
install -m 0755 "$work/$name/bin/herald" "$root/usr/bin/herald"
install -m 0644 deploy/systemd/herald.service "$root/lib/systemd/system/herald.service"
install -m 0600 deploy/systemd/herald.env "$root/etc/herald/herald.env"
install -m 0644 LICENSE NOTICE README.md CHANGELOG.md "$root/usr/share/doc/herald/"
cp -R docs deploy "$root/usr/share/doc/herald/"
find "$root/usr/share/doc/herald" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +
echo /etc/herald/herald.env >"$root/DEBIAN/conffiles"
# The C libraries the binary loads, by the Debian packages that hold them (dpkg knows a file by
# the path its package installed, /lib or /usr/lib, whichever that was).
packages=()
for library in $(ldd "$binary" | awk '/=> \// { print $3 }'); do
  owner=$(dpkg -S "$library" 2>/dev/null || dpkg -S "$(realpath "$library")" 2>/dev/null || true)
  [ -n "$owner" ] && packages+=("${owner%%:*}")
done
depends=$(printf '%s\n' "${packages[@]}" | sort -u | grep -v -x -e libc6 -e libgcc-s1 -e libstdc++6 | paste -sd, - | sed 's/,/, /g' || true)
cat >"$root/DEBIAN/control" <<CONTROL
Package: herald
Version: $version
Architecture: $debian_arch
Maintainer: Herald maintainers <herald@example.org>
Depends: libc6, libgcc-s1, libstdc++6${depends:+, $depends}
Section: net
Priority: optional
Homepage: https://github.com/herald-push/herald
Description: self-hosted push-notification gateway for end-to-end encrypted messaging apps
 Herald turns events into APNs, FCM and Web Push notifications for registered devices,
 reads Kasia messages off the Kaspa chain and speaks the Matrix push gateway API.
CONTROL
cat >"$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  getent group herald >/dev/null || groupadd --system herald
  getent passwd herald >/dev/null || useradd --system --gid herald --home-dir /var/lib/herald --shell /usr/sbin/nologin herald
  install -d -m 0700 -o herald -g herald /var/lib/herald
  # The keys phones and browsers pin, made once and kept across upgrades (readable to the service's
  # group only); herald.env names them.
  [ -e /etc/herald/signing-key.pem ] || /usr/bin/herald signing-key --out /etc/herald --group herald >/dev/null
  [ -e /etc/herald/vapid-private.pem ] || /usr/bin/herald vapid-keys --out /etc/herald --group herald >/dev/null
  if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi
POSTINST
cat >"$root/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl stop herald.service 2>/dev/null || true; fi
PRERM
cat >"$root/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
# Removing keeps the data (/var/lib/herald) and the user; purging removes both. The keys in
# /etc/herald stay even then: phones pin the signing key, subscriptions the VAPID key.
if [ "$1" = purge ]; then
  rm -rf /var/lib/herald
  getent passwd herald >/dev/null && userdel herald || true
  getent group herald >/dev/null && groupdel herald || true
fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
POSTRM
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
deb=$out/herald_${version}_$debian_arch.deb
dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "package: $deb"
