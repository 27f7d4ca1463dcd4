package agents

// Exported for the external tests.
var (
	RunList     = runList
	RunShow     = runShow
	RunRestart  = runRestart
	RunRemove   = runRemove
	RunOutdated = runOutdated
)
