package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/conduitmcp/conduit/host"
)

// reloadSettle is how long the file must be quiet after a change before it
// is read: an editor's save is often several events (truncate, write,
// rename, chmod), and a half-written file must not be read.
const reloadSettle = 200 * time.Millisecond

// reload is one reading of the configuration file, for the host's output.
type reload struct {
	Time time.Time
	// Why: "SIGHUP" or "file changed".
	Why string
	// Servers is how many servers the file names, once applied.
	Servers int
	// Err, when set, is why the file was not applied: the running
	// configuration is kept.
	Err error
}

// watchConfig re-reads the configuration file of conduit host on SIGHUP
// and when it changes on disk, and applies it to h (Host.Apply: unchanged
// servers keep their process); a file that cannot be read or is invalid
// is reported and the running configuration kept. Each reading is handed
// to report, before it is applied. It returns when ctx ends. The directory is watched, not the
// file: an editor that saves by writing a new file and renaming it over
// the old one replaces the file a watch would follow.
func watchConfig(ctx context.Context, path string, h *host.Host, logger *slog.Logger, report func(reload)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	var changes <-chan fsnotify.Event
	var watchErrs <-chan error
	if w, err := watchDir(path); err != nil {
		logger.Warn(fmt.Sprintf("%s will be reloaded on SIGHUP only: %v", path, err))
	} else {
		defer w.Close()
		changes, watchErrs = w.Events, w.Errors
	}
	abs, _ := filepath.Abs(path)
	settle := time.NewTimer(0)
	<-settle.C
	defer settle.Stop()
	apply := func(why string) {
		r := reload{Time: time.Now(), Why: why}
		cfg, warnings, err := host.Load(path)
		for _, w := range warnings {
			logger.Warn(w)
		}
		if err != nil {
			r.Err = err
			report(r)
			return
		}
		r.Servers = len(cfg.Servers)
		report(r) // first: the reload is told before the changes it makes
		h.Apply(cfg)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			apply("SIGHUP")
		case ev, ok := <-changes:
			if !ok {
				changes = nil
				break
			}
			if name, _ := filepath.Abs(ev.Name); name == abs && !ev.Has(fsnotify.Chmod) {
				settle.Reset(reloadSettle)
			}
		case <-settle.C:
			apply("file changed")
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil
				break
			}
			logger.Warn(fmt.Sprintf("watching %s: %v", path, err))
		}
	}
}

// watchDir watches the directory of path.
func watchDir(path string) (*fsnotify.Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		return nil, errors.Join(err, w.Close())
	}
	return w, nil
}
