package roll

// The unexported verdicts the tests of package roll_test judge.
var (
	NoGoAfterStart = noGoAfterStart
	Prepared       = prepared
)

// AwaitCopies is the wait of an indexer turn before its node stops.
var AwaitCopies = awaitCopies
