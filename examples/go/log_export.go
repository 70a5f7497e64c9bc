package cuzk

/*
#include "cuzk.h"
*/
import "C"

import "unsafe"

//export cuzkGoLog
func cuzkGoLog(user unsafe.Pointer, level C.cuzk_log_level, target, message *C.char) {
	loggerMu.RLock()
	f := logger
	loggerMu.RUnlock()
	if f != nil {
		f(LogLevel(level), C.GoString(target), C.GoString(message))
	}
}
