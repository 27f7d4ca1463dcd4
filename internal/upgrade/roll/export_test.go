package roll

// The unexported verdicts the tests of package roll_test judge.
var (
	NoGoAfterStart = noGoAfterStart
	Prepared       = prepared
)
