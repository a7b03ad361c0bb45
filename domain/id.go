package domain

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// NewID returns a new identifier: a version 7 UUID in its canonical
// 36-character form. Version 7 ids sort by creation time, which keeps
// database indexes compact.
func NewID() string {
	var u [16]byte
	ms := uint64(time.Now().UnixMilli())
	idMu.Lock()
	// Keep ids strictly increasing within a process even when several are
	// made in the same millisecond: bump a 12-bit counter in rand_a.
	if ms <= idLastMS {
		idSeq++
		if idSeq > 0x0fff {
			idLastMS++
			idSeq = 0
		}
		ms = idLastMS
	} else {
		idLastMS = ms
		idSeq = 0
	}
	seq := idSeq
	idMu.Unlock()
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], ms)
	copy(u[0:6], ts[2:8])
	_, _ = rand.Read(u[6:])
	u[6] = 0x70 | byte(seq>>8)
	u[7] = byte(seq)
	u[8] = (u[8] & 0x3f) | 0x80
	return formatUUID(u)
}

var (
	idMu     sync.Mutex
	idLastMS uint64
	idSeq    uint16
)

func formatUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return string(b[:])
}

// ValidID reports whether s is a well-formed id: a UUID in canonical,
// lower-case hexadecimal form (any version), as NewID makes. The service
// requires it of session, message and run ids it receives; tenant and user
// ids come from the host and follow ValidName instead.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f')
}

// ValidName reports whether s is usable as a tenant or user id supplied by
// the host: 1 to 128 bytes of printable ASCII without spaces.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
