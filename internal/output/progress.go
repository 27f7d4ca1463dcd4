package output

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// ProgressBar is one live progress bar on a terminal (github.com/schollz/progressbar/v3):
// description, percent, done/total (bytes in IEC units, or a count), rate
// and elapsed/remaining time, redrawn in place. Only for a terminal: off a
// terminal callers print nothing (or JSON) instead.
type ProgressBar struct {
	bar   *progressbar.ProgressBar
	total int64
}

// BarRedraw is how often a bar is redrawn at most.
const BarRedraw = 100 * time.Millisecond

// NewProgressBar starts a bar on w (stderr) for total units (bytes when bytes is
// true, else a count of what). total ≤ 0: not known yet (a spinner).
func NewProgressBar(w io.Writer, description string, total int64, bytes bool, what string) *ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(BarRedraw),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionUseIECUnits(true),
		// No redraw goroutine for spinners: every Set redraws.
		progressbar.OptionSetSpinnerChangeInterval(0),
	}
	opts = append(opts, progressbar.OptionShowCount())
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionSetItsString(what))
	}
	return &ProgressBar{bar: progressbar.NewOptions64(barMax(total), opts...), total: total}
}

func barMax(total int64) int64 {
	if total <= 0 {
		return -1
	}
	return total
}

// Set moves the bar to done of total (a changed total is taken over).
func (b *ProgressBar) Set(done, total int64) {
	if total != b.total {
		b.total = total
		b.bar.ChangeMax64(barMax(total))
	}
	_ = b.bar.Set64(done)
}

// Clear erases the bar from its line, so that a message can be printed
// there; the next Set draws it again.
func (b *ProgressBar) Clear() { _ = b.bar.Clear() }

// Close erases the bar for good.
func (b *ProgressBar) Close() {
	_ = b.bar.Clear()
	_ = b.bar.Exit()
}
