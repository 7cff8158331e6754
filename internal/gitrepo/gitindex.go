package gitrepo

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// errSpliceUnsupported says that an index cannot be spliced (version 4's
// compressed names, a split or sparse index): the caller decodes and
// encodes it whole instead.
var errSpliceUnsupported = errors.New("index format not spliced")

// spliceIndex writes to w the git index data (version 2 or 3) with the
// entries replacing those of the same paths (every stage), without
// decoding the other entries: their bytes are copied as they are, so the
// cost is a copy and a checksum of the file, not an allocation per
// tracked file as a full decode and encode would be. Extensions that
// describe the entries as a whole are dropped for git to rebuild: the
// cache tree (TREE), the untracked cache (UNTR), the fsmonitor state
// (FSMN) and the offset tables (EOIE, IEOT); the resolve-undo data (REUC)
// is kept. A format it does not handle returns errSpliceUnsupported
// before anything is written.
func spliceIndex(w io.Writer, data []byte, entries []*index.Entry) error {
	if len(data) < 12+20 || string(data[:4]) != "DIRC" {
		return errors.New("not a git index")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version != 2 && version != 3 {
		return errSpliceUnsupported
	}
	count := int(binary.BigEndian.Uint32(data[8:12]))
	body := data[:len(data)-20]

	news := append([]*index.Entry(nil), entries...)
	sort.Slice(news, func(i, j int) bool { return news[i].Name < news[j].Name })
	encoded := make([][]byte, len(news))
	for i, e := range news {
		b, err := encodeEntry(e)
		if err != nil {
			return err
		}
		encoded[i] = b
	}

	// One pass over the entries: the byte ranges to copy and where each
	// new entry goes.
	type piece struct {
		from, to int // old bytes to copy, or
		entry    int // a new entry (-1 for none)
	}
	var pieces []piece
	copyFrom := 12
	off := 12
	j := 0
	skipped := 0
	for range count {
		if off+62 > len(body) {
			return errors.New("truncated index entry")
		}
		flags := binary.BigEndian.Uint16(body[off+60:])
		hdr := 62
		if flags&0x4000 != 0 {
			if version < 3 {
				return errors.New("extended flag in a version 2 index")
			}
			hdr += 2
		}
		nameLen := int(flags & 0xfff)
		start := off + hdr
		if nameLen == 0xfff {
			k := bytes.IndexByte(body[start:], 0)
			if k < 0 {
				return errors.New("unterminated index entry name")
			}
			nameLen = k
		}
		if start+nameLen > len(body) {
			return errors.New("truncated index entry")
		}
		name := body[start : start+nameLen]
		end := off + ((hdr + nameLen + 8) &^ 7)
		for j < len(news) && news[j].Name < string(name) {
			pieces = append(pieces, piece{from: copyFrom, to: off, entry: j})
			copyFrom = off
			j++
		}
		if j < len(news) && news[j].Name == string(name) {
			pieces = append(pieces, piece{from: copyFrom, to: off, entry: -1})
			copyFrom = end
			skipped++
		}
		off = end
	}
	entriesEnd := off
	for ; j < len(news); j++ {
		pieces = append(pieces, piece{from: copyFrom, to: entriesEnd, entry: j})
		copyFrom = entriesEnd
	}
	pieces = append(pieces, piece{from: copyFrom, to: entriesEnd, entry: -1})

	keep, err := keptExtensions(body[entriesEnd:])
	if err != nil {
		return err
	}

	h := sha1.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<20)
	var head [12]byte
	copy(head[:], data[:8])
	binary.BigEndian.PutUint32(head[8:], uint32(count-skipped+len(news)))
	bw.Write(head[:])
	for _, p := range pieces {
		bw.Write(body[p.from:p.to])
		if p.entry >= 0 {
			bw.Write(encoded[p.entry])
		}
	}
	for _, e := range keep {
		bw.Write(e)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(h.Sum(nil))
	return err
}

// keptExtensions returns the extensions of an index (the bytes after its
// entries) that a splice keeps, or errSpliceUnsupported for one it cannot
// keep.
func keptExtensions(ext []byte) ([][]byte, error) {
	var keep [][]byte
	for len(ext) > 0 {
		if len(ext) < 8 {
			return nil, errors.New("truncated index extension")
		}
		sig := string(ext[:4])
		size := int(binary.BigEndian.Uint32(ext[4:8]))
		if 8+size > len(ext) {
			return nil, fmt.Errorf("truncated index extension %q", sig)
		}
		switch {
		case sig == "REUC" || sig == "link":
			// A split index's link (the shared index and its
			// deleted and replaced entries) stands: the new entries
			// are added to the split index, where git lets them
			// replace the shared index's entries of the same path.
			keep = append(keep, ext[:8+size])
		case sig == "sdir" || sig[0] < 'A' || sig[0] > 'Z':
			// A split or sparse index, or an extension git requires
			// to be understood.
			return nil, errSpliceUnsupported
		}
		ext = ext[8+size:]
	}
	return keep, nil
}

// encodeEntry returns the on-disk bytes of one version 2 entry, as
// go-git's encoder writes it.
func encodeEntry(e *index.Entry) ([]byte, error) {
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(&index.Index{Version: 2, Entries: []*index.Entry{e}}); err != nil {
		return nil, fmt.Errorf("encoding the index entry of %s: %w", e.Name, err)
	}
	b := buf.Bytes()
	return b[12 : len(b)-20], nil
}

// indexExtensions returns the extensions of a version 2 or 3 index by
// signature, or ok false for an index it cannot walk.
func indexExtensions(data []byte) (map[string][]byte, bool) {
	if len(data) < 12+20 || string(data[:4]) != "DIRC" {
		return nil, false
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version != 2 && version != 3 {
		return nil, false
	}
	body := data[:len(data)-20]
	off := 12
	for range int(binary.BigEndian.Uint32(data[8:12])) {
		if off+62 > len(body) {
			return nil, false
		}
		flags := binary.BigEndian.Uint16(body[off+60:])
		hdr := 62
		if flags&0x4000 != 0 {
			hdr += 2
		}
		nameLen := int(flags & 0xfff)
		if nameLen == 0xfff {
			k := bytes.IndexByte(body[off+hdr:], 0)
			if k < 0 {
				return nil, false
			}
			nameLen = k
		}
		off += (hdr + nameLen + 8) &^ 7
	}
	exts := map[string][]byte{}
	for ext := body[min(off, len(body)):]; len(ext) > 0; {
		if len(ext) < 8 {
			return nil, false
		}
		size := int(binary.BigEndian.Uint32(ext[4:8]))
		if 8+size > len(ext) {
			return nil, false
		}
		exts[string(ext[:4])] = ext[8 : 8+size]
		ext = ext[8+size:]
	}
	return exts, true
}

// linkedBase returns the shared index's checksum when the index is a
// split index (a "link" extension).
func linkedBase(data []byte) ([]byte, bool) {
	exts, ok := indexExtensions(data)
	if link := exts["link"]; ok && len(link) >= 20 {
		return link[:20], true
	}
	return nil, false
}

// splittable reports whether an index can become a split index's shared
// index: one git can read as such (not sparse, nothing it must
// understand that rigor does not know of, a checksum to name it by). An
// index of another version is not walked and stays whole.
func splittable(data []byte) bool {
	exts, ok := indexExtensions(data)
	if !ok || bytes.Equal(data[len(data)-20:], make([]byte, 20)) {
		return false
	}
	for sig := range exts {
		if sig == "link" || sig == "sdir" || sig[0] < 'A' || sig[0] > 'Z' {
			return false
		}
	}
	return true
}

// emptyEWAH is an empty EWAH bitmap as git serializes one: no bits, one
// (empty) run-length word, at position 0.
var emptyEWAH = []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

// writeSplitIndex writes a split index holding only the entries, over the
// shared index with the checksum base: nothing of it deleted or replaced
// in place (empty bitmaps); git's reading adds the entries, each replacing
// the shared index's entries of its path.
func writeSplitIndex(w io.Writer, base []byte, entries []*index.Entry) error {
	news := append([]*index.Entry(nil), entries...)
	sort.Slice(news, func(i, j int) bool { return news[i].Name < news[j].Name })
	h := sha1.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	var head [12]byte
	copy(head[:], "DIRC")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], uint32(len(news)))
	bw.Write(head[:])
	for _, e := range news {
		b, err := encodeEntry(e)
		if err != nil {
			return err
		}
		bw.Write(b)
	}
	var ext [8]byte
	copy(ext[:], "link")
	binary.BigEndian.PutUint32(ext[4:], uint32(20+2*len(emptyEWAH)))
	bw.Write(ext[:])
	bw.Write(base)
	bw.Write(emptyEWAH)
	bw.Write(emptyEWAH)
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}
