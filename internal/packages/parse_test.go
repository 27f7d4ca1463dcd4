package packages

import (
	"reflect"
	"testing"
)

const policyLabNotInstalled = `siem-demo:
  Installed: (none)
  Candidate: 4.10.0-1
  Version table:
     4.10.0-1 500
        500 file:/tmp/pkgscratch/repo ./ Packages
     4.9.0-1 500
        500 file:/tmp/pkgscratch/repo ./ Packages
`

const policyLabInstalled = `siem-demo:
  Installed: 4.10.0-1
  Candidate: 4.10.0-1
  Version table:
 *** 4.10.0-1 500
        500 file:/tmp/pkgscratch/repo ./ Packages
        100 /tmp/pkgscratch/root/var/lib/dpkg/status
     4.9.0-1 500
        500 file:/tmp/pkgscratch/repo ./ Packages
`

// The real multi-repo format (Debian 12: main, updates, security).
const policyOpenSSL = `openssl:
  Installed: 3.0.19-1~deb12u2
  Candidate: 3.0.22-1~deb12u2
  Version table:
     3.0.22-1~deb12u2 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
     3.0.20-1~deb12u2 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
 *** 3.0.19-1~deb12u2 100
        100 /var/lib/dpkg/status
     3.0.17-1~deb12u2 500
        500 http://deb.debian.org/debian bookworm-updates/main amd64 Packages
rsyslog:
  Installed: (none)
  Candidate: 8.2302.0-1+deb12u2
  Version table:
     8.2302.0-1+deb12u2 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
     8.2302.0-1+deb12u1 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
`

const policyPinned = `siem-demo:
  Installed: 4.9.0-1
  Candidate: 4.9.0-1
  Package pin: 4.9.0-1
  Version table:
     4.10.0-1 1001
        500 file:/repo ./ Packages
 *** 4.9.0-1 1001
        500 file:/repo ./ Packages
        100 /var/lib/dpkg/status
orphan:
  Installed: 1.0
  Candidate: (none)
  Version table:
 *** 1.0 100
        100 /var/lib/dpkg/status
`

func TestParsePolicy(t *testing.T) {
	repo := PolicySource{500, "file:/tmp/pkgscratch/repo ./ Packages"}
	tests := []struct {
		name    string
		in      string
		want    []Policy
		wantErr bool
	}{
		{"empty (unknown package)", "", nil, false},
		{"lab not installed", policyLabNotInstalled, []Policy{{
			Package: "siem-demo", Candidate: "4.10.0-1", Available: []string{"4.10.0-1", "4.9.0-1"},
			Table: []PolicyVersion{
				{Version: "4.10.0-1", Priority: 500, Sources: []PolicySource{repo}},
				{Version: "4.9.0-1", Priority: 500, Sources: []PolicySource{repo}},
			},
		}}, false},
		{"lab installed", policyLabInstalled, []Policy{{
			Package: "siem-demo", Installed: "4.10.0-1", Candidate: "4.10.0-1", Available: []string{"4.10.0-1", "4.9.0-1"},
			Table: []PolicyVersion{
				{Version: "4.10.0-1", Priority: 500, Installed: true, Sources: []PolicySource{repo, {100, "/tmp/pkgscratch/root/var/lib/dpkg/status"}}},
				{Version: "4.9.0-1", Priority: 500, Sources: []PolicySource{repo}},
			},
		}}, false},
		{"bad version row", "x:\n  Version table:\n     1.0 high\n", nil, true},
		{"row before package", "     1.0 500\n", nil, true},
		{"garbage header", "this is not apt\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePolicy(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParsePolicyMultiRepo(t *testing.T) {
	got, err := ParsePolicy(policyOpenSSL)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d blocks", len(got))
	}
	o := got[0]
	if o.Package != "openssl" || o.Installed != "3.0.19-1~deb12u2" || o.Candidate != "3.0.22-1~deb12u2" {
		t.Fatalf("openssl: %+v", o)
	}
	// 3.0.19 is only in the status file: not available from a repository.
	if want := []string{"3.0.22-1~deb12u2", "3.0.20-1~deb12u2", "3.0.17-1~deb12u2"}; !reflect.DeepEqual(o.Available, want) {
		t.Fatalf("Available = %v", o.Available)
	}
	if !o.Table[2].Installed || o.Table[2].Priority != 100 || !o.Table[2].Sources[0].IsStatus() {
		t.Fatalf("installed row: %+v", o.Table[2])
	}
	if o.Table[0].Sources[0].Origin != "http://deb.debian.org/debian-security bookworm-security/main amd64 Packages" {
		t.Fatalf("origin: %q", o.Table[0].Sources[0].Origin)
	}
	if o.Has("3.0.19-1~deb12u2") || !o.Has("3.0.17-1~deb12u2") {
		t.Fatal("Has")
	}
	r := got[1]
	if r.Installed != "" || r.Candidate != "8.2302.0-1+deb12u2" || len(r.Available) != 2 {
		t.Fatalf("rsyslog: %+v", r)
	}

	pinned, err := ParsePolicy(policyPinned)
	if err != nil {
		t.Fatal(err)
	}
	if pinned[0].Candidate != "4.9.0-1" || pinned[0].Table[0].Priority != 1001 || len(pinned[0].Available) != 2 {
		t.Fatalf("pinned: %+v", pinned[0])
	}
	if pinned[1].Candidate != "" || len(pinned[1].Available) != 0 || pinned[1].Installed != "1.0" {
		t.Fatalf("orphan: %+v", pinned[1])
	}
}

func TestParseMadison(t *testing.T) {
	in := " siem-demo |   4.10.0-1 | file:/tmp/pkgscratch/repo ./ Packages\n siem-demo |    4.9.0-1 | file:/tmp/pkgscratch/repo ./ Packages\n" +
		"   openssl | 3.0.22-1~deb12u2 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\nN: junk\n"
	want := []MadisonEntry{
		{"siem-demo", "4.10.0-1", "file:/tmp/pkgscratch/repo ./ Packages"},
		{"siem-demo", "4.9.0-1", "file:/tmp/pkgscratch/repo ./ Packages"},
		{"openssl", "3.0.22-1~deb12u2", "http://deb.debian.org/debian-security bookworm-security/main amd64 Packages"},
	}
	if got := ParseMadison(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
}

func TestParseDpkgQuery(t *testing.T) {
	in := "siem-demo\tinstall ok installed\t4.10.0-1\n" +
		"held\thold ok installed\t1:2.0-3\n" +
		"removed\tdeinstall ok config-files\t4.9.0-1\n" +
		"half\tinstall reinstreq half-installed\t1.0\n" +
		"libc6:amd64\tinstall ok installed\t2.36-9\n" +
		"unknown\tunknown ok not-installed\t\n" +
		"malformed line\n"
	want := map[string]string{"siem-demo": "4.10.0-1", "held": "1:2.0-3", "libc6": "2.36-9"}
	if got := ParseDpkgQuery(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestParseRPMQuery(t *testing.T) {
	in := "wazuh-manager\t4.10.0-1\nfilebeat\t7.10.2-1\nkernel\t1:5.14.0-362.el9\npackage nope is not installed\n"
	want := map[string]string{"wazuh-manager": "4.10.0-1", "filebeat": "7.10.2-1", "kernel": "1:5.14.0-362.el9"}
	if got := ParseRPMQuery(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

func TestCompareDeb(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"4.10.0-1", "4.9.0-1", 1},
		{"4.9.0-1", "4.10.0-1", -1},
		{"4.10.0-1", "4.10.0-1", 0},
		{"4.10.0-2", "4.10.0-1", 1},
		{"1:4.0-1", "4.10.0-1", 1},
		{"4.10.0~rc1-1", "4.10.0-1", -1},
		{"3.0.22-1~deb12u2", "3.0.19-1~deb12u2", 1},
		{"1.6-2.1+deb12u3", "1.6-2.1+deb12u1", 1},
		{"not a version!", "1.0", 1},
	}
	for _, tt := range tests {
		if got := CompareDeb(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareDeb(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestCompareRPM(t *testing.T) {
	// Cases from rpm's own test suite (tests/rpmvercmp.at) plus EVR.
	tests := []struct {
		a, b string
		want int
	}{
		{"1.0", "1.0", 0}, {"1.0", "2.0", -1}, {"2.0", "1.0", 1},
		{"2.0.1", "2.0.1", 0}, {"2.0", "2.0.1", -1}, {"2.0.1a", "2.0.1", 1},
		{"5.5p1", "5.5p2", -1}, {"5.5p10", "5.5p1", 1},
		{"10xyz", "10.1xyz", -1}, {"xyz10", "xyz10.1", -1},
		{"xyz.4", "8", -1}, {"8", "xyz.4", 1},
		{"1.0aa", "1.0a", 1}, {"2.0", "2_0", 0}, {"2.0", "2a", 1},
		{"1.0~rc1", "1.0", -1}, {"1.0~rc1", "1.0~rc2", -1}, {"1.0~rc1~git123", "1.0~rc1", -1},
		{"1.0^", "1.0", 1}, {"1.0^git1", "1.0", 1}, {"1.0^git1", "1.01", -1}, {"1.0^20160101", "1.0.1", -1},
		{"1.0~rc1^git1", "1.0~rc1", 1}, {"1.0^git1~pre", "1.0^git1", -1},
		{"00100", "100", 0},
		{"4.10.0-1", "4.9.0-1", 1}, {"1:1.0-1", "2.0-1", 1}, {"4.10.0-2", "4.10.0-10", -1},
		{"4.10.0", "4.10.0-3", 0},
	}
	for _, tt := range tests {
		if got := CompareRPM(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareRPM(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestUpstream(t *testing.T) {
	for in, want := range map[string]string{
		"4.10.0-1": "4.10.0", "1:4.10.0-1": "4.10.0", "4.10.0": "4.10.0", "7.10.2-1": "7.10.2",
		"3.0.22-1~deb12u2": "3.0.22", "1.2-3-4": "1.2-3", "": "",
	} {
		if got := Upstream(in); got != want {
			t.Errorf("Upstream(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParsePolicy(f *testing.F) {
	for _, s := range []string{policyLabInstalled, policyOpenSSL, policyPinned, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pols, err := ParsePolicy(s)
		if err != nil {
			return
		}
		for _, p := range pols {
			if len(p.Available) > len(p.Table) {
				t.Fatalf("more available than table rows: %+v", p)
			}
		}
	})
}
