package lab

import (
	"crypto/sha256"
	"encoding/hex"
)

// LabID derives the lab's short id (its cgroups are lab-<id>) from the absolute lab directory, so
// parallel labs in different directories never share cgroups.
func LabID(absDir string) string {
	sum := sha256.Sum256([]byte(absDir))
	return hex.EncodeToString(sum[:])[:10]
}
