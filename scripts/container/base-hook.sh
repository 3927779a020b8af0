#!/bin/sh
# mmdebstrap's customize hook for the container test's Node.js base ($1: the root file system):
# what the official node image has and Debian's nodejs package lacks (npm, a `node` user with
# uid 1000), and the host's own CA certificates, which build containers need to reach the package
# registries through this machine's TLS-intercepting proxy. Test-only: the published image is
# built FROM the official node image, never from this base.
set -eu
root="$1"
npm_tarball="$2"
for cert in /usr/local/share/ca-certificates/*.crt; do
  [ -e "$cert" ] && cp "$cert" "$root/usr/local/share/ca-certificates/"
done
chroot "$root" update-ca-certificates >/dev/null 2>&1
mkdir -p "$root/usr/lib/node_modules/npm"
tar -xzf "$npm_tarball" -C "$root/usr/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/bin/npx"
echo 'node:x:1000:1000::/home/node:/bin/sh' >>"$root/etc/passwd"
echo 'node:x:1000:' >>"$root/etc/group"
echo 'node:*:20000:0:99999:7:::' >>"$root/etc/shadow"
mkdir -p "$root/home/node"
chown 1000:1000 "$root/home/node"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old
