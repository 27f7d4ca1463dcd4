package security

// Exported for the external tests.
var (
	RunUsersList = runUsersList
	RunUsersAdd  = runUsersAdd
	RunHash      = runHash
	RunBackup    = runBackup
	RunApply     = runApply
)
