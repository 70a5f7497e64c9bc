package cuzk

/*
#include <stdint.h>
#include "cuzk.h"

void cuzkGoProgress(uintptr_t user, uint64_t job_id, uint64_t done, uint64_t failed, uint64_t total, bool finished);

// The ABI's callback: passes its user data (a cgo.Handle's value, never a Go pointer) on.
static void cuzk_go_progress(void *user, uint64_t job_id, uint64_t done, uint64_t failed, uint64_t total, bool finished) {
	cuzkGoProgress((uintptr_t)user, job_id, done, failed, total, finished);
}

// Register cuzk_go_progress with a cgo.Handle's value as its user data, on either job kind.
static enum cuzk_status cuzk_go_job_on_progress(const cuzk_job *job, uintptr_t user, char **err) {
	return cuzk_job_on_progress(job, cuzk_go_progress, (void *)user, err);
}

static enum cuzk_status cuzk_go_filecoin_job_on_progress(const cuzk_filecoin_job *job, uintptr_t user, char **err) {
	return cuzk_filecoin_job_on_progress(job, cuzk_go_progress, (void *)user, err);
}
*/
import "C"

import (
	"runtime/cgo"
	"sync"
	"unsafe"
)

// A job's progress, pushed: both job kinds (Job, FilecoinJob: their jobCore, job.go) register
// the binding's own callback with the library when they are made (cuzk_job_on_progress,
// cuzk_filecoin_job_on_progress), through a cgo.Handle of a progressSink, so no Go pointer is
// stored in C. The sink keeps the latest event and forwards each to OnProgress's f.

// ProgressEvent is what an OnProgress callback receives.
type ProgressEvent struct {
	// JobID is unique within the engine.
	JobID uint64
	// Done partitions proved and Failed left unproved (failed, or dropped because the job
	// failed or was cancelled) of Total.
	Done, Failed, Total uint64
	// Finished: the job is over (Done+Failed == Total); this is the last event.
	Finished bool
}

// progressSink is what a job's cgo.Handle refers to. It holds no reference to its job, so
// an abandoned job can still be collected (its finalizer releases the handle).
type progressSink struct {
	handle cgo.Handle // of this sink; deleted by release once the library no longer calls it

	mu   sync.Mutex
	f    func(ProgressEvent) // OnProgress's callback (nil: none)
	last ProgressEvent       // the latest event
	over chan struct{}       // closed at the final event, or by release
	once sync.Once           // closes over
}

func newProgressSink() *progressSink {
	s := &progressSink{over: make(chan struct{})}
	s.handle = cgo.NewHandle(s)
	return s
}

// watchJob and watchFilecoinJob register the binding's callback (with user, a sink's
// cgo.Handle) on a job of either kind (jobKind.watch). The library calls it once at least,
// when the job is over.
func watchJob(p unsafe.Pointer, user C.uintptr_t, e **C.char) C.enum_cuzk_status {
	return C.cuzk_go_job_on_progress((*C.struct_cuzk_job)(p), user, e)
}

func watchFilecoinJob(p unsafe.Pointer, user C.uintptr_t, e **C.char) C.enum_cuzk_status {
	return C.cuzk_go_filecoin_job_on_progress((*C.struct_cuzk_filecoin_job)(p), user, e)
}

func (s *progressSink) end() { s.once.Do(func() { close(s.over) }) }

// event runs on an engine thread (through cuzkGoProgress) for each event.
func (s *progressSink) event(ev ProgressEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.Finished {
		return // the final event came already
	}
	s.last = ev
	if s.f != nil {
		s.f(ev)
	}
	if ev.Finished {
		s.end()
	}
}

// forward is OnProgress: f receives the events from now on, and the final one at once if it
// came already.
func (s *progressSink) forward(f func(ProgressEvent)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.f = f
	if s.last.Finished && f != nil {
		f(s.last)
	}
}

// release runs once the job's *_free returned (the library never calls the sink again): it
// frees the handle, drops f and releases whoever waits for the final event, which may never
// come now (a job cancelled with a partition still proving is over only once that proof ends).
func (s *progressSink) release() {
	s.handle.Delete()
	s.mu.Lock()
	s.f = nil
	s.mu.Unlock()
	s.end()
}
