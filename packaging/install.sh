#!/bin/sh
# Install the siemctl snapshot service and hourly timer, reload systemd and
# start the timer:
#
#   sudo packaging/install.sh [--bin /usr/local/bin/siemctl] [--dry-run] [--uninstall]
#
# DESTDIR=/some/root installs the unit files under that root (for packaging)
# and leaves systemd alone. SIEMCTL_UNIT_DIR overrides /etc/systemd/system.
# --dry-run prints what would be done and changes nothing.
set -eu

usage() {
	echo "usage: $0 [--bin PATH] [--dry-run] [--uninstall]" >&2
	exit 2
}

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
bin=/usr/local/bin/siemctl
dry=0
uninstall=0
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) [ $# -ge 2 ] || usage; bin=$2; shift 2 ;;
	--bin=*) bin=${1#--bin=}; shift ;;
	--dry-run|-n) dry=1; shift ;;
	--uninstall) uninstall=1; shift ;;
	-h|--help) usage ;;
	*) echo "$0: unknown argument: $1" >&2; usage ;;
	esac
done
case "$bin" in
/*) ;;
*) echo "$0: --bin must be an absolute path, got: $bin" >&2; exit 2 ;;
esac
case "$bin" in
*[!A-Za-z0-9._/+-]*) echo "$0: --bin has characters unsafe in a unit file: $bin" >&2; exit 2 ;;
esac

destdir=${DESTDIR:-}
unitdir=${destdir}${SIEMCTL_UNIT_DIR:-/etc/systemd/system}
units="siemctl-snapshot.service siemctl-snapshot.timer"

run() {
	if [ "$dry" = 1 ]; then
		echo "+ $*"
	else
		"$@"
	fi
}

# Systemd is only touched for a live install (no DESTDIR).
systemd() {
	if [ -n "$destdir" ]; then
		return 0
	fi
	run systemctl "$@"
}

if [ "$uninstall" = 1 ]; then
	systemd disable --now siemctl-snapshot.timer || true
	for u in $units; do
		run rm -f "$unitdir/$u"
	done
	systemd daemon-reload
	exit 0
fi

if [ -z "$destdir" ] && [ "$dry" = 0 ] && [ ! -x "$bin" ]; then
	echo "$0: warning: $bin is not an executable yet; the timer will fail until it is (use --bin PATH)" >&2
fi

run install -d -m 0755 "$unitdir"
for u in $units; do
	if [ "$dry" = 1 ]; then
		echo "+ install -m 0644 $here/$u $unitdir/$u (ExecStart binary: $bin)"
		continue
	fi
	tmp=$(mktemp "$unitdir/.$u.XXXXXX")
	sed "s|/usr/local/bin/siemctl|$bin|g" "$here/$u" >"$tmp"
	chmod 0644 "$tmp"
	mv -f "$tmp" "$unitdir/$u"
done
systemd daemon-reload
systemd enable --now siemctl-snapshot.timer
if [ -n "$destdir" ]; then
	echo "installed into $unitdir (DESTDIR set: systemd not touched)"
elif [ "$dry" = 0 ]; then
	echo "siemctl-snapshot.timer enabled: see 'systemctl list-timers siemctl-snapshot.timer'"
fi
