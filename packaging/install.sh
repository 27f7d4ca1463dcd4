#!/bin/sh
# Install the siemctl snapshot service and hourly timer, reload systemd and
# start the timer:
#
#   sudo packaging/install.sh [--bin /usr/local/bin/siemctl] [--units "UNIT..."] [--dry-run] [--uninstall]
#
# The service is ordered After= the profile's indexer and manager units: by
# default those of this host's configuration (siemctl config view
# indexer.unit manager.unit, so the profile and any override are followed),
# or --units. Without either (no siemctl yet, or DESTDIR packaging) the
# checked-in After= lists the units of every profile. Wants= is not used for
# them: it would start a stopped indexer or manager every hour.
#
# DESTDIR=/some/root installs the unit files under that root (for packaging)
# and leaves systemd alone. SIEMCTL_UNIT_DIR overrides /etc/systemd/system.
# --dry-run prints what would be done and changes nothing.
set -eu

usage() {
	echo "usage: $0 [--bin PATH] [--units \"UNIT...\"] [--dry-run] [--uninstall]" >&2
	exit 2
}

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
bin=/usr/local/bin/siemctl
dry=0
uninstall=0
units_arg=
units_set=0
while [ $# -gt 0 ]; do
	case "$1" in
	--bin) [ $# -ge 2 ] || usage; bin=$2; shift 2 ;;
	--bin=*) bin=${1#--bin=}; shift ;;
	--units) [ $# -ge 2 ] || usage; units_arg=$2; units_set=1; shift 2 ;;
	--units=*) units_arg=${1#--units=}; units_set=1; shift ;;
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

# The stack units to order after: --units, else the host's configuration.
after=
if [ "$units_set" = 1 ]; then
	after=$units_arg
	[ -n "$after" ] || { echo "$0: --units is empty" >&2; exit 2; }
elif [ -z "$destdir" ] && [ -x "$bin" ]; then
	if got=$("$bin" config view indexer.unit manager.unit 2>/dev/null | awk -F '\t' 'NR > 1 && $2 != "" { printf "%s ", $2 }'); then
		after=${got% }
	fi
	if [ -z "$after" ]; then
		echo "$0: note: could not read indexer.unit/manager.unit from '$bin config view': After= lists every profile's units" >&2
	fi
fi
for u in $after; do
	case "$u" in
	*[!A-Za-z0-9@._:-]*|"") echo "$0: unit name has unsafe characters: $u" >&2; exit 2 ;;
	*.service) ;;
	*) echo "$0: not a service unit: $u" >&2; exit 2 ;;
	esac
done

run install -d -m 0755 "$unitdir"
for u in $units; do
	if [ "$dry" = 1 ]; then
		echo "+ install -m 0644 $here/$u $unitdir/$u (ExecStart binary: $bin${after:+; After= network-online.target $after})"
		continue
	fi
	tmp=$(mktemp "$unitdir/.$u.XXXXXX")
	if [ -n "$after" ]; then
		sed -e "s|/usr/local/bin/siemctl|$bin|g" -e "s|^After=network-online.target .*|After=network-online.target $after|" "$here/$u" >"$tmp"
	else
		sed "s|/usr/local/bin/siemctl|$bin|g" "$here/$u" >"$tmp"
	fi
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
