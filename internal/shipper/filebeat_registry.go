package shipper

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Filebeat's registry (7.x, libbeat statestore memlog) is <path.data>/registry/filebeat: the active
// checkpoint (active.dat names it: a JSON array of {"_key": key, state...}, its name the last
// transaction id) and log.json, the transactions since (line pairs {"op":"set","id":N} and
// {"k":key,"v":state}, ids consecutive). The rewind appends one "set" transaction with the next id:
// Filebeat replays it over the checkpoint when it starts, as it would its own write.
// (The rollback step that calls it is the kind shipper.registry_rewind, internal/steps.)

// RegistryDir is Filebeat's registry directory under its path.data (dataDir): the read position
// of every file it tails, the alerts file's among them.
func RegistryDir(dataDir string) string { return filepath.Join(dataDir, "registry") }

// Rewound is what RewindRegistry did.
type Rewound struct {
	File     string
	Key      string
	From, To int64 // the read position before and after (equal: nothing to send again)
	Cutoff   time.Time
	// Why is set when nothing was changed: why not.
	Why string
}

func (r Rewound) String() string {
	if r.Why != "" {
		return "shipper registry not rewound: " + r.Why
	}
	if r.From == r.To {
		return fmt.Sprintf("%s: nothing written since %s was read (position %d): nothing to send again", r.File, r.Cutoff.UTC().Format(time.RFC3339), r.From)
	}
	return fmt.Sprintf("shipper registry rewound: %s from position %d to %d (%d bytes of alerts since %s sent again; deterministic ids keep each once)",
		r.File, r.From, r.To, r.From-r.To, r.Cutoff.UTC().Format(time.RFC3339))
}

// RewindRegistry moves the read position of the alerts file in the Filebeat registry at dir
// (<path.data>/registry/filebeat) back to the first line of alerts whose timestamp is at or after
// cutoff, never forward. A registry without a state for that file (or one for a file rotated away
// since) is left as it is, with the reason.
func RewindRegistry(dir, alerts string, cutoff time.Time) (Rewound, error) {
	out := Rewound{File: alerts, Cutoff: cutoff}
	states, lastID, err := readRegistry(dir)
	if errors.Is(err, fs.ErrNotExist) {
		out.Why = dir + " does not exist: the shipper reads the alerts from the start"
		return out, nil
	}
	if err != nil {
		return out, err
	}
	fi, err := os.Stat(alerts)
	if err != nil {
		out.Why = fmt.Sprintf("the alerts file: %v", err)
		return out, nil
	}
	var key string
	var state map[string]any
	for k, v := range states {
		src, _ := v["source"].(string)
		if src == "" {
			continue
		}
		if sfi, err := os.Stat(src); err == nil && os.SameFile(sfi, fi) && sameInode(v, fi) {
			key, state = k, v
			break
		}
	}
	if state == nil {
		out.Why = "no registry state for " + alerts + " as it is now (rotated since it was read, or never read): alerts in rotated files are not sent again"
		return out, nil
	}
	out.Key = key
	from, err := numberOf(state["offset"])
	if err != nil {
		return out, fmt.Errorf("%s: registry state %s: offset: %w", dir, key, err)
	}
	to, err := firstLineSince(alerts, from, cutoff)
	if err != nil {
		return out, err
	}
	out.From, out.To = from, to
	if to >= from {
		out.To = from
		return out, nil
	}
	state["offset"] = to
	if err := appendSet(filepath.Join(dir, "log.json"), lastID+1, key, state); err != nil {
		return out, err
	}
	return out, nil
}

// sameInode: the state's FileStateOS names the file as it is now (no FileStateOS: not checked).
func sameInode(state map[string]any, fi os.FileInfo) bool {
	fs, ok := state["FileStateOS"].(map[string]any)
	if !ok {
		return true
	}
	ino, err := numberOf(fs["inode"])
	if err != nil {
		return true
	}
	return uint64(ino) == inodeOf(fi)
}

func numberOf(v any) (int64, error) {
	switch n := v.(type) {
	case json.Number:
		return n.Int64()
	case float64:
		return int64(n), nil
	case int64:
		return n, nil
	}
	return 0, fmt.Errorf("not a number: %v", v)
}

// readRegistry reads the registry's states (key → state) and the last transaction id: the active
// checkpoint, then log.json's transactions after it.
func readRegistry(dir string) (map[string]map[string]any, uint64, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, 0, err
	}
	states := map[string]map[string]any{}
	var txid uint64
	if marker, err := os.ReadFile(filepath.Join(dir, "active.dat")); err == nil && len(bytes.TrimSpace(marker)) > 0 {
		cp := strings.TrimSpace(string(marker))
		if !filepath.IsAbs(cp) {
			cp = filepath.Join(dir, filepath.Base(cp))
		}
		if txid, err = strconv.ParseUint(strings.TrimSuffix(filepath.Base(cp), ".json"), 10, 64); err != nil {
			return nil, 0, fmt.Errorf("%s: active.dat names %s, not <txid>.json", dir, cp)
		}
		data, err := os.ReadFile(cp)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: the active checkpoint: %w", dir, err)
		}
		var entries []map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&entries); err != nil {
			return nil, 0, fmt.Errorf("%s: %v", cp, err)
		}
		for _, e := range entries {
			k, _ := e["_key"].(string)
			delete(e, "_key")
			states[k] = e
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, err
	}
	last := txid
	f, err := os.Open(filepath.Join(dir, "log.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return states, last, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.UseNumber()
	for {
		var op struct {
			Op string `json:"op"`
			ID uint64 `json:"id"`
		}
		if err := dec.Decode(&op); err == io.EOF {
			break
		} else if err != nil {
			return nil, 0, fmt.Errorf("%s/log.json: %v", dir, err)
		}
		var body struct {
			K string         `json:"k"`
			V map[string]any `json:"v"`
		}
		if err := dec.Decode(&body); err != nil {
			return nil, 0, fmt.Errorf("%s/log.json: transaction %d: %v", dir, op.ID, err)
		}
		if op.ID <= txid {
			continue // written before the checkpoint
		}
		if op.ID != last+1 {
			return nil, 0, fmt.Errorf("%s/log.json: transaction %d after %d: the registry is not consistent; leave it to the shipper", dir, op.ID, last)
		}
		last = op.ID
		switch op.Op {
		case "set":
			states[body.K] = body.V
		case "remove":
			delete(states, body.K)
		}
	}
	return states, last, nil
}

// firstLineSince is the position of the first line of alerts before limit whose "timestamp" is at
// or after cutoff (limit when none is).
func firstLineSince(alerts string, limit int64, cutoff time.Time) (int64, error) {
	f, err := os.Open(alerts)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	var pos int64
	for pos < limit {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var a struct {
				Timestamp string `json:"timestamp"`
			}
			if json.Unmarshal(line, &a) == nil {
				if ts, ok := alertTime(a.Timestamp); ok && !ts.Before(cutoff) {
					return pos, nil
				}
			}
		}
		pos += int64(len(line))
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	return limit, nil
}

// alertTime parses an alert's timestamp as Wazuh writes it (2026-12-07T17:30:11.123+0000) or RFC 3339.
func alertTime(s string) (time.Time, bool) {
	for _, layout := range []string{"2006-01-02T15:04:05.000-0700", "2006-01-02T15:04:05-0700", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// appendSet appends one "set" transaction to log.json in a single write, synced. A log.json whose
// last line is not complete is not written to (Filebeat would stop at it).
func appendSet(logFile string, id uint64, key string, state map[string]any) error {
	if fi, err := os.Lstat(logFile); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file (a symlink is not written through)", logFile)
		}
		if fi.Size() > 0 {
			f, err := os.Open(logFile)
			if err != nil {
				return err
			}
			b := make([]byte, 1)
			_, rerr := f.ReadAt(b, fi.Size()-1)
			f.Close()
			if rerr != nil {
				return rerr
			}
			if b[0] != '\n' {
				return fmt.Errorf("%s ends in an incomplete line: not rewound (the shipper repairs its registry when it starts)", logFile)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	op, err := json.Marshal(map[string]any{"op": "set", "id": id})
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"k": key, "v": state})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(logFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(append(append(op, '\n'), body...), '\n'))
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(werr, serr, cerr)
}

// inodeOf is the file's inode number (0 where the platform does not say).
func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
