package indexer

// Exported for the external tests.
var (
	RunAllocation = runAllocation
	RunShards     = runShards
	RunFlush      = runFlush
	RunWatermark  = runWatermark
)

var (
	RunRepositoryShow    = runRepositoryShow
	RunRepositoryPrepare = runRepositoryPrepare
)
