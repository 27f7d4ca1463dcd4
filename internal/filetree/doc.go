// Package filetree copies, archives and restores file trees without
// trusting them: a manifest (Manifest, Entry) records every file, directory
// and link with its mode, owner and sha256; Copy and Scan build one, Compare
// checks a copy against it; WriteArchive/ExtractArchive keep configuration
// as tar.gz; SHA256SUMS files (AddSums, VerifySum) catch a damaged backup.
// Restores never write through a symlink that could have been planted
// (OpenDirNoFollow and the *At helpers walk from "/" one component at a
// time and return a *LinkError naming the path; RemoveAllAt removes a tree
// without following one). Bytes sums a tree's regular files.
//
// The package knows nothing of runs, steps or the stack: internal/steps
// (backup.*, restore.*, the manager's db copy, the shipper's registry)
// and internal/rundata (the set-aside directories) import it.
package filetree
