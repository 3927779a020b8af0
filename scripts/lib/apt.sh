# Debian packages for the project's scripts (sourced): installs that wait for another apt or dpkg
# run (a package install elsewhere on the machine, unattended upgrades) instead of failing.
# `apt-get install` waits for dpkg's lock through DPkg::Lock::Timeout; `apt-get update` does not
# honour it for the package lists' lock, so it is tried again while that lock is the problem.

APT_LOCK_WAIT_S="${APT_LOCK_WAIT_S:-600}"

apt_update() {
  local deadline=$((SECONDS + APT_LOCK_WAIT_S)) err
  while :; do
    if err="$(apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" update -qq 2>&1 >/dev/null)"; then return 0; fi
    if [[ $err != *"Could not get lock"* ]] || ((SECONDS >= deadline)); then
      echo "$err" >&2
      return 1
    fi
    sleep 3
  done
}

# apt_install PACKAGE...: updates the lists, then installs without recommended packages.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt_update
  apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT_S" install -y -qq --no-install-recommends "$@" >/dev/null
}
