package cuzk

/*
#include <stdint.h>
#include "cuzk.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// What the two job kinds share: a Job (Engine.Submit) and a FilecoinJob (a Submit… call) each
// hold a *jobCore, which owns the library's handle and the job's progress, and gives both
// their Cancel, Progress, OnProgress and Close; only their Waits differ (what the result is).

// jobKind is a job kind's C functions (cuzk_job_* or cuzk_filecoin_job_*).
type jobKind struct {
	cancel   func(p unsafe.Pointer) C.bool
	progress func(p unsafe.Pointer, done, total *C.uint64_t, finished *C.bool, e **C.char) C.enum_cuzk_status
	watch    func(p unsafe.Pointer, user C.uintptr_t, e **C.char) C.enum_cuzk_status // progress.go
	free     func(p unsafe.Pointer)
}

var engineJobKind = &jobKind{
	cancel: func(p unsafe.Pointer) C.bool { return C.cuzk_job_cancel((*C.struct_cuzk_job)(p)) },
	progress: func(p unsafe.Pointer, done, total *C.uint64_t, finished *C.bool, e **C.char) C.enum_cuzk_status {
		return C.cuzk_job_progress((*C.struct_cuzk_job)(p), done, total, finished, e)
	},
	watch: watchJob,
	free:  func(p unsafe.Pointer) { C.cuzk_job_free((*C.struct_cuzk_job)(p)) },
}

var filecoinJobKind = &jobKind{
	cancel: func(p unsafe.Pointer) C.bool { return C.cuzk_filecoin_job_cancel((*C.struct_cuzk_filecoin_job)(p)) },
	progress: func(p unsafe.Pointer, done, total *C.uint64_t, finished *C.bool, e **C.char) C.enum_cuzk_status {
		return C.cuzk_filecoin_job_progress((*C.struct_cuzk_filecoin_job)(p), done, total, finished, e)
	},
	watch: watchFilecoinJob,
	free:  func(p unsafe.Pointer) { C.cuzk_filecoin_job_free((*C.struct_cuzk_filecoin_job)(p)) },
}

// jobCore is a submitted job's handle. Progress can be polled (Progress) or pushed
// (OnProgress, a callback from the engine's threads). Either way the binding registers its own
// progress callback with the library when the job is made (cuzk_job_on_progress or
// cuzk_filecoin_job_on_progress, through a cgo.Handle: no Go pointer is stored in C); it
// forwards to OnProgress's f and tells a Wait that needs it when the job is over. An abandoned
// job is closed by the core's finalizer.
//
// The core holds the job's *Engine until the job is closed: while a job is referenced its
// engine is too, so the engine's finalizer (which closes the engine and so cancels its jobs)
// cannot run under a job still in use. Go runs the finalizer of an object that references
// another first, so an abandoned job is closed before its engine.
type jobCore struct {
	h    handle
	kind *jobKind
	sink *progressSink // the job's progress (progress.go)
	// eng is the engine the job runs on (nil: the process-wide Filecoin engine), held until
	// Close; only written, never read: it is there to be reachable.
	eng *Engine
}

// newJobCore takes the library's job p of this kind on eng (nil: the process-wide Filecoin
// engine) and registers the binding's callback; on failure the job is freed.
func newJobCore(kind *jobKind, p unsafe.Pointer, eng *Engine) (*jobCore, error) {
	j := &jobCore{h: handle{ptr: p}, kind: kind, sink: newProgressSink(), eng: eng}
	runtime.SetFinalizer(j, func(j *jobCore) { j.Close() })
	err := call(func(e **C.char) C.enum_cuzk_status { return kind.watch(p, C.uintptr_t(j.sink.handle), e) })
	if err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// Cancel cancels the job: partitions not yet on a GPU are dropped, Wait then returns
// StatusCancelled. It reports whether the job was still running (false once it is over,
// waited for, or closed).
func (j *jobCore) Cancel() bool {
	running := false
	_ = j.h.use(func(p unsafe.Pointer) error {
		running = bool(j.kind.cancel(p))
		return nil
	})
	return running
}

// JobProgress is a job's progress as Progress polls it.
type JobProgress struct {
	// Done partitions proved of Total; Finished once the job is over (also after Wait; a
	// failed or cancelled job's Done stays below Total; a FilecoinJob is finished once the
	// engine is done with it: Wait then only verifies). OnProgress's events also count the
	// failed partitions.
	Done, Total uint64
	Finished    bool
}

// Progress polls the job's progress.
func (j *jobCore) Progress() (JobProgress, error) {
	var done, total C.uint64_t
	var finished C.bool
	err := j.h.use(func(p unsafe.Pointer) error {
		return call(func(e **C.char) C.enum_cuzk_status { return j.kind.progress(p, &done, &total, &finished, e) })
	})
	return JobProgress{uint64(done), uint64(total), bool(finished)}, err
}

// OnProgress calls f after each partition of the job is proved or fails, and once when the
// engine is done with the job (Finished, the last call; a FilecoinJob's Wait then only
// verifies the proofs, and may still fail); if it is done already (Wait may have returned
// too), f is called once with the final event before OnProgress returns. f runs on an engine
// thread (or the goroutine that cancels the job or closes its engine) with the job locked: it
// must return quickly, must not block, and must not call this job's methods. A second
// OnProgress replaces the first; nil removes it; once OnProgress or Close returns, the
// previous f is never called again.
func (j *jobCore) OnProgress(f func(ProgressEvent)) error {
	return j.h.use(func(unsafe.Pointer) error {
		j.sink.forward(f)
		return nil
	})
}

// Close frees the job; a job not yet over is cancelled first, and a Wait under way returns
// (StatusCancelled or ErrClosed). A second Close returns ErrClosed.
func (j *jobCore) Close() error {
	runtime.SetFinalizer(j, nil)
	// Cancel first: the library's *_free must not run while a Wait holds the job, and a
	// Wait holds it only until the job is over.
	j.Cancel()
	return closeWith(&j.h, func(p unsafe.Pointer) {
		j.kind.free(p)
		// The *_free returned: the library never calls the job's callback again, and the
		// Waits under way for the final event are released (ErrClosed).
		j.sink.release()
		// The job no longer needs its engine (only the Close that took p gets here).
		j.eng = nil
	})
}
