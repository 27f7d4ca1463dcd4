package services

// Exported for the external tests.
var (
	RunStatus = runStatus
	RunAction = runAction
	RunEnable = runEnable
)
