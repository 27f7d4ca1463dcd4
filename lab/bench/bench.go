// Package bench holds the upgrade benchmarks' arithmetic: the tables that
// scripts/bench-upgrade.sh and scripts/bench-upgrade-cluster.sh write while they
// drive the labs, turned into the lines `make bench-upgrade` prints (floor,
// growth and ratio against the bare upgrade; per host floor against turn for the
// rolling upgrade). The drivers call it through `siemlab bench floor|cluster`,
// so every figure the README quotes comes from code with unit tests.
package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// table reads a TSV with a header line: the rows after it, split on tabs.
// Blank lines are skipped.
func table(r io.Reader) ([][]string, error) {
	var rows [][]string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		rows = append(rows, strings.Split(sc.Text(), "\t"))
	}
	return rows, sc.Err()
}

// tableFile is table over the file at path, its errors naming the path.
func tableFile(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := table(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}

// field is row's column i (0-based), "" past its end.
func field(row []string, i int) string {
	if i < len(row) {
		return row[i]
	}
	return ""
}

// num is row's column i as a number; a missing or unreadable cell is an error
// naming the table, the row and the column.
func num(name string, row []string, i int) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(field(row, i)), 64)
	if err != nil {
		return 0, fmt.Errorf("%s: row %q: column %d is not a number (%q)", name, strings.Join(row, "\t"), i+1, field(row, i))
	}
	return v, nil
}

// ratio is a/b as the benchmarks print it, n/a without a positive b.
func ratio(a, b float64) string {
	if b > 0 {
		return fmt.Sprintf("%.2f×", a/b)
	}
	return "n/a"
}

// mean is an accumulator of a mean.
type mean struct {
	sum float64
	n   int
}

func (m *mean) add(v float64) { m.sum += v; m.n++ }
func (m mean) ok() bool       { return m.n > 0 }
func (m mean) value() float64 { return m.sum / float64(max(m.n, 1)) }
func (m mean) or(s string) string {
	if !m.ok() {
		return s
	}
	return fmt.Sprintf("%.1fs", m.value())
}
