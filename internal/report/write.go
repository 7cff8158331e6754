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
	"sync"
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
// Every page is checked before any is written.
func (s *Site) Write(dir string) error {
	w, err := openSite(dir)
	if err != nil {
		return err
	}
	defer w.abandon()
	paths := s.paths()
	for _, p := range s.Pages {
		check := w.check
		if p.Keep {
			check = w.checkKeep
		}
		if err := check(p.Path); err != nil {
			return err
		}
	}
	w.expect(paths)
	for _, p := range s.Pages {
		if p.Keep {
			w.keep(p.Path)
			continue
		}
		if err := w.put(p.Path, p.HTML); err != nil {
			return err
		}
	}
	return w.finish()
}

// siteWriter writes a site's files one at a time, as they are built
// ([Site.Write], [WriteGroups]), with the guarantees [Site.Write] states.
// A new directory is written beside its place and renamed into it by
// finish. In an existing one, the manifest lists both reports' files
// until the old ones are gone, so that a report cut short is still
// replaced whole by the next: before the first file the earlier manifest
// does not list is written, the manifest is rewritten to list every file
// this report may write (expect). A file that already holds the bytes a
// page has is not written again, nor the manifest when it lists the same
// files: a second report of an unchanged store writes no file.
type siteWriter struct {
	dir   string // where the site ends up
	root  string // where its files are written: dir, or the new directory beside it
	fresh bool
	// old are the files the earlier report's manifest lists, wrote the
	// same as a set; onDisk maps what dir held when opened.
	old    []string
	wrote  map[string]bool
	onDisk map[string]fs.FileMode

	mu       sync.Mutex
	listed   map[string]bool // the files the manifest on disk lists
	expected []string        // the files this report may write
	paths    map[string]bool // the files this report wrote or kept
	done     bool
}

func openSite(dir string) (*siteWriter, error) {
	dir = filepath.Clean(dir)
	w := &siteWriter{dir: dir, root: dir, paths: map[string]bool{}, wrote: map[string]bool{}, listed: map[string]bool{}}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		parent := filepath.Dir(dir)
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("writing report: %w", err)
		}
		tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".*.tmp")
		if err != nil {
			return nil, fmt.Errorf("writing report: %w", err)
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("writing report: %w", err)
		}
		w.root, w.fresh = tmp, true
		return w, nil
	case err != nil:
		return nil, fmt.Errorf("writing report: %w", err)
	case !fi.IsDir():
		return nil, &DirError{Dir: dir, Reason: "is a file"}
	}
	if w.onDisk, err = scanDir(dir); err != nil {
		return nil, fmt.Errorf("writing report: %w", err)
	}
	if len(w.onDisk) > 0 {
		if w.old, err = readManifest(dir); err != nil {
			return nil, err
		}
	}
	for _, p := range w.old {
		w.wrote[p], w.listed[p] = true, true
	}
	return w, nil
}

// check refuses a file the report may not write: one the earlier report
// did not write, or one below a file or a symlink.
func (w *siteWriter) check(p string) error {
	if w.fresh {
		return nil
	}
	for q := path.Dir(p); q != "."; q = path.Dir(q) {
		switch m, ok := w.onDisk[q]; {
		case !ok || m.IsDir():
		case m&fs.ModeSymlink != 0:
			return &DirError{Dir: filepath.Join(w.dir, filepath.FromSlash(q)), Reason: "is a symlink, not a folder the report wrote"}
		default:
			return &FileError{Path: filepath.Join(w.dir, filepath.FromSlash(q)), Dir: w.dir}
		}
	}
	if m, ok := w.onDisk[p]; ok && (!m.IsRegular() || !w.wrote[p]) {
		return &FileError{Path: filepath.Join(w.dir, filepath.FromSlash(p)), Dir: w.dir}
	}
	return nil
}

// checkKeep refuses to keep a file the earlier report did not leave.
func (w *siteWriter) checkKeep(p string) error {
	if w.fresh {
		return &DirError{Dir: w.dir, Reason: "does not hold the earlier report whose pages this one keeps"}
	}
	if err := w.check(p); err != nil {
		return err
	}
	if m, ok := w.onDisk[p]; !ok || !m.IsRegular() || !w.wrote[p] {
		return &DirError{Dir: w.dir, Reason: fmt.Sprintf("no longer holds %s, which this report keeps from the earlier one", p)}
	}
	return nil
}

// expect names the files the report may write; those it may not are left
// out (put refuses them).
func (w *siteWriter) expect(paths []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range paths {
		if w.check(p) == nil {
			w.expected = append(w.expected, p)
		}
	}
}

// keep keeps a file of the earlier report (checked by checkKeep).
func (w *siteWriter) keep(p string) {
	w.mu.Lock()
	w.paths[p] = true
	w.mu.Unlock()
}

// put writes one file of the site. It may be called from several
// goroutines, for different files.
func (w *siteWriter) put(p string, data []byte) error {
	if err := w.check(p); err != nil {
		return err
	}
	w.mu.Lock()
	if !w.fresh && !w.listed[p] {
		for _, q := range append(w.expected, p) {
			w.listed[q] = true
		}
		all := make([]string, 0, len(w.listed))
		for q := range w.listed {
			all = append(all, q)
		}
		slices.Sort(all)
		if err := writeChanged(filepath.Join(w.dir, markerName), manifest(all), true); err != nil {
			w.mu.Unlock()
			return fmt.Errorf("writing report: %w", err)
		}
	}
	w.paths[p] = true
	w.mu.Unlock()
	f := filepath.Join(w.root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	if w.fresh {
		err := os.WriteFile(f, data, 0o644)
		if err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		return nil
	}
	if err := writeChanged(f, data, w.wrote[p] && w.onDisk[p].IsRegular()); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// finish removes the earlier report's files that this one did not write
// or keep and writes the manifest; a new directory is renamed into place.
func (w *siteWriter) finish() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	paths := make([]string, 0, len(w.paths))
	for p := range w.paths {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if w.fresh {
		if err := os.WriteFile(filepath.Join(w.root, markerName), manifest(paths), 0o644); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		if err := os.Rename(w.root, w.dir); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		w.done = true
		return nil
	}
	for _, p := range w.old {
		if w.paths[p] || !w.onDisk[p].IsRegular() {
			continue
		}
		f := filepath.Join(w.dir, filepath.FromSlash(p))
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("writing report: %w", err)
		}
		// Folders left empty go too; one that holds anything stays.
		for q := path.Dir(p); q != "."; q = path.Dir(q) {
			if os.Remove(filepath.Join(w.dir, filepath.FromSlash(q))) != nil {
				break
			}
		}
	}
	if err := writeChanged(filepath.Join(w.dir, markerName), manifest(paths), true); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	w.done = true
	return nil
}

// abandon removes a new directory that was not finished.
func (w *siteWriter) abandon() {
	if w.fresh && !w.done {
		os.RemoveAll(w.root)
	}
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
