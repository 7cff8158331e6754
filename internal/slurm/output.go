package slurm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// OutputKept is how long the output file of a job that did not succeed is
// kept on its node after its last write: the next rigor job on that node
// removes it after that. The output of a job whose record was published
// ok is removed by the job itself ([NodeTask.Output]), unless the batch
// keeps outputs (rigor run --slurm --keep-output), and then after
// OutputKept too.
const OutputKept = 7 * 24 * time.Hour

// OutputKeptFor is OutputKept as the messages say it.
const OutputKeptFor = "7 days"

// outputName is the name of a job's output file ([Batch.OutputPattern]):
// rigor-<batch>-<job>_<index>.out.
var outputName = regexp.MustCompile(`^rigor-\d{8}T\d{6}Z-[0-9a-f]{4}-\d+_\d+\.out$`)

// RemoveOldOutputs removes from dir the rigor jobs' output files last
// written before before, and returns how many it removed. Other users'
// files (which /tmp's sticky bit keeps) and anything not named like a
// job's output are left alone.
func RemoveOldOutputs(dir string, before time.Time) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range ents {
		if !e.Type().IsRegular() || !outputName.MatchString(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(before) {
			continue
		}
		switch err := os.Remove(filepath.Join(dir, e.Name())); {
		case err == nil:
			n++
		case errors.Is(err, os.ErrPermission) || errors.Is(err, os.ErrNotExist):
			// Another user's, or another job removed it first.
		default:
			errs = append(errs, fmt.Errorf("removing an old job output: %w", err))
		}
	}
	return n, errors.Join(errs...)
}

func firstTime(t ...time.Time) time.Time {
	for _, x := range t {
		if !x.IsZero() {
			return x
		}
	}
	return time.Time{}
}
