package bloomkv

import "github.com/bloomkv/bloomkv/internal/manifest"

// fileNumReserve is how many file numbers each manifest edit reserves
// ahead of use when the reservation runs low.
const fileNumReserve = 64

// allocFileNum hands out a file number that the durable manifest has
// reserved (it is below the manifest's NextFileNum), writing a manifest
// edit to reserve more when the reservation is used up. So every file the
// engine writes has a number below what the manifest records, and a file
// at or above it is one the engine never wrote. With pending, the number is
// registered in pendingOutputs in the same critical section, so that file
// collection never sees the new file unregistered.
// REQUIRES: db.mu and manifestMu not held.
func (db *DB) allocFileNum(pending bool, cause writeCause) (uint64, error) {
	for {
		db.mu.Lock()
		if n, ok := db.takeFileNumLocked(); ok {
			if pending {
				db.mu.pendingOutputs[n] = struct{}{}
			}
			db.mu.Unlock()
			return n, nil
		}
		db.mu.Unlock()
		db.manifestMu.Lock()
		err := db.logAndApply(&manifest.VersionEdit{}, cause) // reserves more
		db.manifestMu.Unlock()
		if err != nil {
			return 0, err
		}
	}
}

// takeFileNumLocked takes the next reserved number that is not a foreign
// file's; ok is false when the reservation is used up. One number is always
// left for a fresh manifest (allocManifestNum), which cannot wait for a
// reservation since it is how reservations are written.
// REQUIRES: db.mu held.
func (db *DB) takeFileNumLocked() (uint64, bool) {
	for {
		n := db.mu.nextFileNum
		if n+1 >= db.mu.fileNumLimit {
			return 0, false
		}
		db.mu.nextFileNum++
		if _, foreign := db.foreignNums[n]; !foreign {
			return n, true
		}
	}
}

// allocManifestNum hands the version set a number for a fresh manifest and
// the NextFileNum that manifest records: a new reservation past it.
// REQUIRES: manifestMu held (the version set is writing); db.mu not held.
func (db *DB) allocManifestNum() (num, next uint64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for {
		num = db.mu.nextFileNum
		db.mu.nextFileNum++
		if _, foreign := db.foreignNums[num]; !foreign {
			break
		}
	}
	return num, max(db.mu.fileNumLimit, db.mu.nextFileNum+fileNumReserve)
}

// nextFileNumToRecordLocked returns the NextFileNum a new manifest edit
// records: the current reservation, extended when less than half of
// fileNumReserve is left. REQUIRES: db.mu held.
func (db *DB) nextFileNumToRecordLocked() uint64 {
	if db.mu.fileNumLimit >= db.mu.nextFileNum+fileNumReserve/2 {
		return db.mu.fileNumLimit
	}
	return db.mu.nextFileNum + fileNumReserve
}
