package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// markerName is the manifest of a report: a header line, then the path of
// every file the report wrote, one a line, slash-separated and relative to
// the report's directory. A later report replaces and removes only the
// files it lists.
const markerName = ".rigor-report"

const markerHeader = "This directory was written by 'rigor report'. The next report replaces and removes the files listed below, and no others."

// Write writes the site into dir.
//
// A new dir is written beside its final place and then renamed into it, so
// that a reader never sees half a report. An existing dir must be empty or
// hold an earlier report's manifest ([markerName]). Then each page is
// replaced whole (written to a temporary file and renamed), the pages of
// the earlier report that this one lacks are removed, and nothing else is
// touched: files a user added are kept, a file the earlier report did not
// write is never overwritten, and nothing is reached through a symlink.
func (s *Site) Write(dir string) error {
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s.writeNew(dir)
	case err != nil:
		return fmt.Errorf("writing report: %w", err)
	case !fi.IsDir():
		return &DirError{Dir: dir, Reason: "is a file"}
	}
	return s.writeOver(dir)
}

// writeNew writes the site into a new directory beside dir and renames it
// into place.
func (s *Site) writeNew(dir string) error {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	for _, p := range s.Pages {
		if p.Keep {
			return &DirError{Dir: dir, Reason: "does not hold the earlier report whose pages this one keeps"}
		}
		f := filepath.Join(tmp, filepath.FromSlash(p.Path))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		if err := os.WriteFile(f, p.HTML, 0o644); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, markerName), manifest(s.paths()), 0o644); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// writeOver writes the site into dir, which exists, replacing and
// removing only the files of the earlier report's manifest.
func (s *Site) writeOver(dir string) error {
	onDisk, err := scanDir(dir)
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	var old []string
	if len(onDisk) > 0 {
		if old, err = readManifest(dir); err != nil {
			return err
		}
	}
	wrote := make(map[string]bool, len(old))
	for _, p := range old {
		wrote[p] = true
	}
	paths := s.paths()
	for _, p := range paths {
		for q := path.Dir(p); q != "."; q = path.Dir(q) {
			switch m, ok := onDisk[q]; {
			case !ok || m.IsDir():
			case m&fs.ModeSymlink != 0:
				return &DirError{Dir: filepath.Join(dir, filepath.FromSlash(q)), Reason: "is a symlink, not a folder the report wrote"}
			default:
				return &FileError{Path: filepath.Join(dir, filepath.FromSlash(q)), Dir: dir}
			}
		}
		if m, ok := onDisk[p]; ok && (!m.IsRegular() || !wrote[p]) {
			return &FileError{Path: filepath.Join(dir, filepath.FromSlash(p)), Dir: dir}
		}
	}
	for _, p := range s.Pages {
		if m, ok := onDisk[p.Path]; p.Keep && (!ok || !m.IsRegular() || !wrote[p.Path]) {
			return &DirError{Dir: dir, Reason: fmt.Sprintf("no longer holds %s, which this report keeps from the earlier one", p.Path)}
		}
	}
	// The manifest lists both reports' files until the old ones are gone,
	// so that a report cut short is still replaced whole by the next.
	// A page whose file already holds the same bytes is not written
	// again, nor the manifest when it lists the same files: a second
	// report of an unchanged store writes no file.
	all := slices.Concat(old, paths)
	slices.Sort(all)
	if err := writeChanged(filepath.Join(dir, markerName), manifest(slices.Compact(all)), true); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	for _, p := range s.Pages {
		if p.Keep {
			continue
		}
		f := filepath.Join(dir, filepath.FromSlash(p.Path))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		if err := writeChanged(f, p.HTML, wrote[p.Path] && onDisk[p.Path].IsRegular()); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
	}
	keep := make(map[string]bool, len(paths))
	for _, p := range paths {
		keep[p] = true
	}
	for _, p := range old {
		if keep[p] || !onDisk[p].IsRegular() {
			continue
		}
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("writing report: %w", err)
		}
		// Folders left empty go too; one that holds anything stays.
		for q := path.Dir(p); q != "."; q = path.Dir(q) {
			if os.Remove(filepath.Join(dir, filepath.FromSlash(q))) != nil {
				break
			}
		}
	}
	if err := writeChanged(filepath.Join(dir, markerName), manifest(paths), true); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// writeChanged is [writeFileAtomic] unless existing (the file is a regular
// file the earlier report wrote) and the file already holds data.
func writeChanged(f string, data []byte, existing bool) error {
	if existing {
		if cur, err := readNoFollow(f); err == nil && bytes.Equal(cur, data) {
			return nil
		}
	}
	return writeFileAtomic(f, data)
}

// readNoFollow reads a regular file, refusing a symlink.
func readNoFollow(f string) ([]byte, error) {
	fi, err := os.Lstat(f)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", f)
	}
	return os.ReadFile(f)
}

// paths returns the site's page paths, sorted.
func (s *Site) paths() []string {
	ps := make([]string, len(s.Pages))
	for i, p := range s.Pages {
		ps[i] = p.Path
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

func manifest(paths []string) []byte {
	var b bytes.Buffer
	b.WriteString(markerHeader + "\n")
	for _, p := range paths {
		b.WriteString(p + "\n")
	}
	return b.Bytes()
}

// readManifest reads the files an earlier report in dir wrote. A missing
// manifest, or a marker without the header (one of an older rigor, or one
// made by hand), means dir is not a report; a listed path that is not a
// file inside dir refuses the whole manifest.
func readManifest(dir string) ([]string, error) {
	notReport := &DirError{Dir: dir, Reason: "exists and holds files that are not a rigor report"}
	data, err := os.ReadFile(filepath.Join(dir, markerName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, notReport
	} else if err != nil {
		return nil, fmt.Errorf("writing report: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() || sc.Text() != markerHeader {
		return nil, notReport
	}
	var paths []string
	for sc.Scan() {
		p := sc.Text()
		if p == "" {
			continue
		}
		if !filepath.IsLocal(p) || path.Clean(p) != p || strings.Contains(p, `\`) || p == markerName {
			return nil, &DirError{Dir: filepath.Join(dir, markerName), Reason: fmt.Sprintf("lists %q, which is not a file inside %s", p, dir)}
		}
		paths = append(paths, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, markerName), err)
	}
	return paths, nil
}

// scanDir maps every entry under dir, symlinks not followed, by its
// slash-separated path relative to dir, to its type. The manifest is left
// out.
func scanDir(dir string) (map[string]fs.FileMode, error) {
	m := map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); rel != markerName {
			m[rel] = d.Type()
		}
		return nil
	})
	return m, err
}

// writeFileAtomic replaces name with data by writing a temporary file
// beside it and renaming that over it.
func writeFileAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// FileError refuses a report that would overwrite a file it did not
// write, or write through one.
type FileError struct {
	Path, Dir string
}

func (e *FileError) Error() string {
	return fmt.Sprintf("writing report: %s was not written by rigor report", e.Path)
}
