package cuzk

/*
#include <stdint.h>
#include <stdbool.h>
*/
import "C"

import "runtime/cgo"

// cuzkGoProgress is the C→Go trampoline of Job.OnProgress and FilecoinJob.OnProgress: user is
// the value of the cgo.Handle of the job's progressSink (a Go pointer never crosses into C).
//
//export cuzkGoProgress
func cuzkGoProgress(user C.uintptr_t, jobID, done, failed, total C.uint64_t, finished C.bool) {
	if sink, ok := cgo.Handle(user).Value().(*progressSink); ok {
		sink.event(ProgressEvent{uint64(jobID), uint64(done), uint64(failed), uint64(total), bool(finished)})
	}
}
